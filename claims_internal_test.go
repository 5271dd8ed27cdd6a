package nmauth

import (
	"bytes"
	"crypto/rand"
	"testing"
	"time"
)

func testMinter(t testing.TB) *tokenMinter {
	ring, err := newKeyRing([][]byte{bytes.Repeat([]byte{7}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	return &tokenMinter{ring: ring, issuer: "nmauth", rand: rand.Reader}
}

// TestMintedTokenVerifies: a token minted with the written-out claims
// passes the verifier and carries what it was minted with.
func TestMintedTokenVerifies(t *testing.T) {
	m := testMinter(t)
	now := time.Now()
	gen := uint64(7)
	tok, jti, err := m.mint(mintArgs{kind: kindNode, subject: `h"1`, network: "n<1>", issuedAt: now, ttl: time.Minute, generation: &gen})
	if err != nil {
		t.Fatal(err)
	}
	v := newTokenVerifier(m.ring, "", func() time.Time { return now }, [numKinds]time.Duration{kindNode: time.Minute}, kindNode)
	c, _, err := v.Verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	if c.Subject != `h"1` || c.Network != "n<1>" || c.ID != jti || c.Generation.Value != gen || !c.IssuedAt.Equal(now) {
		t.Fatalf("claims %+v", c)
	}
}
