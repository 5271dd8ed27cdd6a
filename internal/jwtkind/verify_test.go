package jwtkind

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

var errRefused = errors.New("refused")

// testKeys are the subkeys of the one key of these tests, "k1".
var testKeys = [Count][]byte{User: []byte("user-key"), PreAuth: []byte("pre-auth-key"), Host: []byte("host-key"), Node: []byte("node-key")}

// testHeader is the encoded header of a token under "k1".
var testHeader = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","kid":"k1","typ":"JWT"}`))

func sign(t *testing.T, c *Claims, k Kind) string { return signUnder(t, testHeader, c, k, k) }

// signUnder signs a token of kind k with header and the subkey of kind
// under.
func signUnder(t *testing.T, header string, c *Claims, k, under Kind) string {
	t.Helper()
	tok, err := Sign(header, c, k, func(signing []byte) (sig [sha256.Size]byte) {
		m := hmac.New(sha256.New, testKeys[under])
		m.Write(signing)
		m.Sum(sig[:0])
		return sig
	})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func testClaims(t *testing.T, k Kind, iat time.Time) *Claims {
	id, err := NewID(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c := &Claims{
		RegisteredClaims: jwt.RegisteredClaims{Issuer: "nmauth", Subject: "alice", Audience: jwt.ClaimStrings{Audience[k]},
			ExpiresAt: jwt.NewNumericDate(iat.Add(time.Hour)), ID: id},
		IssuedAt:   IssuedAt{Time: iat},
		Generation: Generation{Value: 3, Present: true},
	}
	if k == Node {
		c.Network = "office"
	}
	return c
}

// TestVerifier: a signed token of an accepted kind verifies as what it
// was signed with; one of another kind, under another key, of a shape
// its kind does not have, from the future or living too long, does not.
func TestVerifier(t *testing.T) {
	now := time.Unix(1772366460, 123456789)
	ttl := [Count]time.Duration{User: time.Hour, PreAuth: time.Hour, Host: time.Hour, Node: time.Hour}
	keys := func(kid string) *[Count][]byte {
		if kid == "k1" {
			return &testKeys
		}
		return nil
	}
	v := NewVerifier("nmauth", func() time.Time { return now }, ttl, errRefused, keys, User, Host, Node)
	for _, k := range []Kind{User, Host, Node} {
		c, kind, err := v.Verify(sign(t, testClaims(t, k, now), k))
		if err != nil || kind != k || c.Subject != "alice" || !c.IssuedAt.Equal(now) || c.Generation.Value != 3 {
			t.Errorf("kind %d: %+v, %d, %v", k, c, kind, err)
		}
	}
	edited := func(k Kind, edit func(*Claims)) string {
		c := testClaims(t, k, now)
		edit(c)
		return sign(t, c, k)
	}
	otherKey := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","kid":"k2","typ":"JWT"}`))
	for name, tok := range map[string]string{
		"pre-auth":           sign(t, testClaims(t, PreAuth, now), PreAuth),
		"user under host's":  signUnder(t, testHeader, testClaims(t, User, now), User, Host),
		"node of no network": edited(Node, func(c *Claims) { c.Network = "" }),
		"user of no gen":     edited(User, func(c *Claims) { c.Generation = Generation{} }),
		"no subject":         edited(User, func(c *Claims) { c.Subject = "" }),
		"no id":              edited(User, func(c *Claims) { c.ID = "" }),
		"from the future":    edited(User, func(c *Claims) { c.IssuedAt.Time = now.Add(MaxClockSkew + time.Second) }),
		"living too long":    edited(User, func(c *Claims) { c.ExpiresAt = jwt.NewNumericDate(now.Add(2 * time.Hour)) }),
		"other issuer":       edited(User, func(c *Claims) { c.Issuer = "other" }),
		"unknown key":        signUnder(t, otherKey, testClaims(t, User, now), User, User),
	} {
		if _, _, err := v.Verify(tok); !errors.Is(err, errRefused) {
			t.Errorf("%s: %v, want refused", name, err)
		}
	}
	if _, _, err := v.Verify(sign(t, testClaims(t, PreAuth, now), PreAuth)); !errors.Is(err, errKind) {
		t.Errorf("a pre-auth token: %v, want %v", err, errKind)
	}
}
