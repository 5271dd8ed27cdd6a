package nmauth

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// sameAsEncodingJSON checks that appendClaims writes the bytes
// encoding/json writes for c, and that they parse back to c.
func sameAsEncodingJSON(t *testing.T, m *tokenMinter, k tokenKind, c *claims) {
	t.Helper()
	want, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := appendClaims(nil, c, m.audience[k])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("appendClaims wrote\n%s\nencoding/json writes\n%s", got, want)
	}
	// Appended after other bytes, it writes the same.
	if after, _ := appendClaims([]byte("x."), c, m.audience[k]); !bytes.Equal(after, append([]byte("x."), want...)) {
		t.Fatalf("appendClaims after a prefix wrote %s", after)
	}
	var back claims
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("%s does not parse: %v", got, err)
	}
	// encoding/json writes each byte that is not UTF-8 as U+FFFD.
	valid := func(s string) string { return strings.ToValidUTF8(s, "\ufffd") }
	if back.Subject != valid(c.Subject) || back.Network != valid(c.Network) || back.Generation != c.Generation ||
		!back.IssuedAt.Equal(c.IssuedAt.Time) || back.TOTP != c.TOTP {
		t.Fatalf("%s parses back as %+v, want %+v", got, back, *c)
	}
}

func testMinter(t testing.TB) *tokenMinter {
	ring, err := newKeyRing([][]byte{bytes.Repeat([]byte{7}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	m, err := newTokenMinter(ring, "nmauth", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestAppendClaimsIsEncodingJSON(t *testing.T) {
	m := testMinter(t)
	iat := time.Date(2031, 2, 3, 4, 5, 6, 7, time.UTC)
	for name, edit := range map[string]func(*claims){
		"user":                   func(*claims) {},
		"no issuer":              func(c *claims) { c.Issuer = "" },
		"node of a network":      func(c *claims) { c.Network = "office-1" },
		"second factor":          func(c *claims) { c.TOTP = true },
		"no generation":          func(c *claims) { c.Generation = generationClaim{} },
		"generation zero":        func(c *claims) { c.Generation = generationClaim{present: true} },
		"largest generation":     func(c *claims) { c.Generation = generationClaim{value: math.MaxUint64, present: true} },
		"whole second":           func(c *claims) { c.IssuedAt = issuedAt{iat.Truncate(time.Second)} },
		"last nanosecond":        func(c *claims) { c.IssuedAt = issuedAt{iat.Add(999999992)} },
		"expiry with fractions":  func(c *claims) { c.ExpiresAt = jwt.NewNumericDate(iat.Add(1500 * time.Millisecond)) },
		"not before":             func(c *claims) { c.NotBefore = jwt.NewNumericDate(iat) },
		"quote and backslash":    func(c *claims) { c.Subject = `host"\one` },
		"characters for HTML":    func(c *claims) { c.Subject = "a<b>&c" },
		"not ASCII":              func(c *claims) { c.Subject = "hôte-Ω-\u2028" },
		"control character":      func(c *claims) { c.Network = "net\x01\t" },
		"not UTF-8":              func(c *claims) { c.Subject = "bad\xff" },
		"issuer of an operator":  func(c *claims) { c.Issuer = "https://auth.example.com/<prod>" },
		"no audience, as parsed": func(c *claims) { c.Audience = nil },
	} {
		t.Run(name, func(t *testing.T) {
			for k := range numKinds {
				c := &claims{
					RegisteredClaims: jwt.RegisteredClaims{
						Issuer: "nmauth", Subject: "alice", Audience: jwt.ClaimStrings{kindAudience[k]},
						ExpiresAt: jwt.NewNumericDate(iat.Add(time.Hour)), ID: "c29tZS10b2tlbi1pZA",
					},
					IssuedAt:   issuedAt{iat},
					Generation: generationClaim{value: 42, present: true},
				}
				edit(c)
				sameAsEncodingJSON(t, m, k, c)
			}
		})
	}
}

// TestAppendClaimsUnderTimePrecision: the dates a token carries are
// written as golang-jwt writes them under whatever jwt.TimePrecision an
// application sets, finer than a second or coarser.
func TestAppendClaimsUnderTimePrecision(t *testing.T) {
	m := testMinter(t)
	was := jwt.TimePrecision
	t.Cleanup(func() { jwt.TimePrecision = was })
	iat := time.Date(2031, 2, 3, 4, 5, 6, 789012345, time.UTC)
	for _, p := range []time.Duration{time.Nanosecond, time.Millisecond, time.Second, 2 * time.Second, time.Minute} {
		jwt.TimePrecision = p
		c := &claims{
			RegisteredClaims: jwt.RegisteredClaims{
				Issuer: "nmauth", Subject: "alice", Audience: jwt.ClaimStrings{kindAudience[kindHost]},
				ExpiresAt: jwt.NewNumericDate(iat.Add(time.Hour + 1500*time.Millisecond)), NotBefore: jwt.NewNumericDate(iat), ID: "c29tZS10b2tlbi1pZA",
			},
			IssuedAt: issuedAt{iat},
		}
		sameAsEncodingJSON(t, m, kindHost, c)
	}
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
	var c claims
	if _, err := v.parser.ParseWithClaims(tok, &c, v.keyFunc); err != nil {
		t.Fatal(err)
	}
	if c.Subject != `h"1` || c.Network != "n<1>" || c.ID != jti || c.Generation.value != gen || !c.IssuedAt.Equal(now) {
		t.Fatalf("claims %+v", c)
	}
}

func FuzzAppendClaims(f *testing.F) {
	f.Add("nmauth", "alice", "office", "jti", int64(1900000000), int64(5), uint64(3), true)
	f.Add("", `a"<\>`, "", "", int64(0), int64(999999999), uint64(0), false)
	m := testMinter(f)
	f.Fuzz(func(t *testing.T, iss, sub, network, id string, sec, nsec int64, gen uint64, totp bool) {
		// The times a token carries: after the epoch, before year 10000.
		sec = 1 + (sec%253402300000+253402300000)%253402300000
		iat := time.Unix(sec, (nsec%1e9+1e9)%1e9)
		c := &claims{
			RegisteredClaims: jwt.RegisteredClaims{
				Issuer: iss, Subject: sub, Audience: jwt.ClaimStrings{kindAudience[kindUser]},
				ExpiresAt: jwt.NewNumericDate(iat.Add(time.Hour)), ID: id,
			},
			IssuedAt: issuedAt{iat}, Network: network, TOTP: totp,
			Generation: generationClaim{value: gen, present: !strings.HasPrefix(sub, "-")},
		}
		want, err := json.Marshal(c)
		if err != nil {
			t.Skip("encoding/json refuses these claims")
		}
		got, err := appendClaims(nil, c, m.audience[kindUser])
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("appendClaims = %s, %v; encoding/json writes %s", got, err, want)
		}
	})
}
