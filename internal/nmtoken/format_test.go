package nmtoken

import (
	"bytes"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/nmauth/nmauth/internal/jwtkind"
)

var errRefused = errors.New("refused")

func testFormat(now *time.Time) *Format {
	user := func(name string) (string, string, error) {
		switch name {
		case "nobody":
			return "", "", nil
		case "broken":
			return "", "", errors.New("no such user")
		}
		return "nm-" + name, "admin", nil
	}
	return NewFormat(bytes.Repeat([]byte{9}, 32), user, rand.Reader, func() time.Time { return *now }, time.Hour, 2*time.Hour, errRefused)
}

// TestFormatRoundTrip: a user and a host token minted verify as what
// they were minted with, their iat cut to the second.
func TestFormatRoundTrip(t *testing.T) {
	now := time.Unix(1772366460, 5e8)
	f := testFormat(&now)
	gen := jwtkind.Generation{Value: 4, Present: true}
	for _, in := range []Token{
		{User: true, Name: "alice", TOTP: true, IssuedAt: now, Generation: gen},
		{Name: "3f2504e0-4f89-11d3-9a0c-0305e82c3301", MAC: "aa:bb:cc:dd:ee:ff", IssuedAt: now, Generation: gen},
	} {
		tok, jti, err := f.Mint(in, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.Verify(tok)
		if err != nil {
			t.Fatalf("%+v: %v", in, err)
		}
		name := in.Name
		if in.User {
			name = "nm-alice"
		}
		iat := now.Truncate(time.Second)
		if got.User != in.User || got.Name != name || got.ID != jti || got.TOTP != in.TOTP || got.Generation != gen ||
			!got.IssuedAt.Equal(iat) || !got.ExpiresAt.Equal(iat.Add(time.Hour)) {
			t.Errorf("minted %+v, verified %+v", in, got)
		}
	}
}

// TestFormatRefuses: what nmauth did not mint, or minted for longer or
// later than it would, does not verify.
func TestFormatRefuses(t *testing.T) {
	now := time.Unix(1772366460, 0)
	f := testFormat(&now)
	gen := jwtkind.Generation{Value: 1, Present: true}
	mint := func(in Token, ttl time.Duration) string {
		tok, _, err := f.Mint(in, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	netmakers, err := jwt.NewWithClaims(jwt.SigningMethodHS256, Claims{RegisteredClaims: jwt.RegisteredClaims{
		Issuer: Issuer, Subject: "node|h1", ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)), IssuedAt: jwt.NewNumericDate(now), ID: "x"},
		HostID: "h1"}).SignedString(bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{
		"without gen":       netmakers,
		"user for too long": mint(Token{User: true, Name: "alice", IssuedAt: now, Generation: gen}, 2*time.Hour),
		"host for too long": mint(Token{Name: "h1", IssuedAt: now, Generation: gen}, 3*time.Hour),
		"from the future":   mint(Token{Name: "h1", IssuedAt: now.Add(time.Minute), Generation: gen}, time.Hour),
		"bad signature":     mint(Token{Name: "h1", IssuedAt: now, Generation: gen}, time.Hour) + "x",
	} {
		if _, err := f.Verify(tok); !errors.Is(err, errRefused) {
			t.Errorf("%s: %v, want refused", name, err)
		}
	}
	if _, _, err := f.Mint(Token{User: true, Name: "nobody", IssuedAt: now}, time.Hour); !errors.Is(err, ErrNoUser) {
		t.Errorf("a user named nothing: %v", err)
	}
	if _, _, err := f.Mint(Token{User: true, Name: "broken", IssuedAt: now}, time.Hour); err == nil ||
		err.Error() != `nmauth: Netmaker's claims of user "broken": no such user` {
		t.Errorf("a user not named: %v", err)
	}
}
