package jwtkind

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// sameAsEncodingJSON checks that AppendClaims writes the bytes
// encoding/json writes for c, and that they parse back to c.
func sameAsEncodingJSON(t *testing.T, k Kind, c *Claims) {
	t.Helper()
	want, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := AppendClaims(nil, c, k)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendClaims wrote\n%s\nencoding/json writes\n%s", got, want)
	}
	// Appended after other bytes, it writes the same.
	if after, _ := AppendClaims([]byte("x."), c, k); !bytes.Equal(after, append([]byte("x."), want...)) {
		t.Fatalf("AppendClaims after a prefix wrote %s", after)
	}
	var back Claims
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

func TestAppendClaimsIsEncodingJSON(t *testing.T) {
	iat := time.Date(2031, 2, 3, 4, 5, 6, 7, time.UTC)
	for name, edit := range map[string]func(*Claims){
		"user":                   func(*Claims) {},
		"no issuer":              func(c *Claims) { c.Issuer = "" },
		"node of a network":      func(c *Claims) { c.Network = "office-1" },
		"second factor":          func(c *Claims) { c.TOTP = true },
		"no generation":          func(c *Claims) { c.Generation = Generation{} },
		"generation zero":        func(c *Claims) { c.Generation = Generation{Present: true} },
		"largest generation":     func(c *Claims) { c.Generation = Generation{Value: math.MaxUint64, Present: true} },
		"whole second":           func(c *Claims) { c.IssuedAt = IssuedAt{Time: iat.Truncate(time.Second)} },
		"last nanosecond":        func(c *Claims) { c.IssuedAt = IssuedAt{Time: iat.Add(999999992)} },
		"expiry with fractions":  func(c *Claims) { c.ExpiresAt = jwt.NewNumericDate(iat.Add(1500 * time.Millisecond)) },
		"not before":             func(c *Claims) { c.NotBefore = jwt.NewNumericDate(iat) },
		"quote and backslash":    func(c *Claims) { c.Subject = `host"\one` },
		"characters for HTML":    func(c *Claims) { c.Subject = "a<b>&c" },
		"not ASCII":              func(c *Claims) { c.Subject = "hôte-Ω-\u2028" },
		"control character":      func(c *Claims) { c.Network = "net\x01\t" },
		"not UTF-8":              func(c *Claims) { c.Subject = "bad\xff" },
		"issuer of an operator":  func(c *Claims) { c.Issuer = "https://auth.example.com/<prod>" },
		"no audience, as parsed": func(c *Claims) { c.Audience = nil },
	} {
		t.Run(name, func(t *testing.T) {
			for k := range Count {
				c := &Claims{
					RegisteredClaims: jwt.RegisteredClaims{
						Issuer: "nmauth", Subject: "alice", Audience: jwt.ClaimStrings{Audience[k]},
						ExpiresAt: jwt.NewNumericDate(iat.Add(time.Hour)), ID: "c29tZS10b2tlbi1pZA",
					},
					IssuedAt:   IssuedAt{Time: iat},
					Generation: Generation{Value: 42, Present: true},
				}
				edit(c)
				sameAsEncodingJSON(t, k, c)
			}
		})
	}
}

// TestAppendClaimsUnderTimePrecision: the dates a token carries are
// written as golang-jwt writes them under whatever jwt.TimePrecision an
// application sets, finer than a second or coarser.
func TestAppendClaimsUnderTimePrecision(t *testing.T) {
	was := jwt.TimePrecision
	t.Cleanup(func() { jwt.TimePrecision = was })
	iat := time.Date(2031, 2, 3, 4, 5, 6, 789012345, time.UTC)
	for _, p := range []time.Duration{time.Nanosecond, time.Millisecond, time.Second, 2 * time.Second, time.Minute} {
		jwt.TimePrecision = p
		c := &Claims{
			RegisteredClaims: jwt.RegisteredClaims{
				Issuer: "nmauth", Subject: "alice", Audience: jwt.ClaimStrings{Audience[Host]},
				ExpiresAt: jwt.NewNumericDate(iat.Add(time.Hour + 1500*time.Millisecond)), NotBefore: jwt.NewNumericDate(iat), ID: "c29tZS10b2tlbi1pZA",
			},
			IssuedAt: IssuedAt{Time: iat},
		}
		sameAsEncodingJSON(t, Host, c)
	}
}

func FuzzAppendClaims(f *testing.F) {
	f.Add("nmauth", "alice", "office", "jti", int64(1900000000), int64(5), uint64(3), true)
	f.Add("", `a"<\>`, "", "", int64(0), int64(999999999), uint64(0), false)
	f.Fuzz(func(t *testing.T, iss, sub, network, id string, sec, nsec int64, gen uint64, totp bool) {
		// The times a token carries: after the epoch, before year 10000.
		sec = 1 + (sec%253402300000+253402300000)%253402300000
		iat := time.Unix(sec, (nsec%1e9+1e9)%1e9)
		c := &Claims{
			RegisteredClaims: jwt.RegisteredClaims{
				Issuer: iss, Subject: sub, Audience: jwt.ClaimStrings{Audience[User]},
				ExpiresAt: jwt.NewNumericDate(iat.Add(time.Hour)), ID: id,
			},
			IssuedAt: IssuedAt{Time: iat}, Network: network, TOTP: totp,
			Generation: Generation{Value: gen, Present: !strings.HasPrefix(sub, "-")},
		}
		want, err := json.Marshal(c)
		if err != nil {
			t.Skip("encoding/json refuses these claims")
		}
		got, err := AppendClaims(nil, c, User)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("AppendClaims = %s, %v; encoding/json writes %s", got, err, want)
		}
	})
}

func TestIssuedAtJSON(t *testing.T) {
	at := IssuedAt{Time: time.Unix(1772366460, 123456789)}
	b, _ := at.MarshalJSON()
	if string(b) != "1772366460.123456789" {
		t.Fatalf("iat written as %s", b)
	}
	var back IssuedAt
	if err := back.UnmarshalJSON(b); err != nil || !back.Equal(at.Time) {
		t.Fatalf("iat read back as %v, %v", back, err)
	}
	for in, want := range map[string]time.Time{"1772366460": time.Unix(1772366460, 0), "1772366460.5": time.Unix(1772366460, 5e8)} {
		var got IssuedAt
		if err := got.UnmarshalJSON([]byte(in)); err != nil || !got.Equal(want) {
			t.Errorf("%s read as %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"-1", "1.1234567891", "1e9", `"1"`, "1.-5", "", "1.x"} {
		var got IssuedAt
		if err := got.UnmarshalJSON([]byte(bad)); err == nil {
			t.Errorf("%q accepted as %v", bad, got)
		}
	}
}
