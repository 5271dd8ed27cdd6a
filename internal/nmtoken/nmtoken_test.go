package nmtoken

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestAccount: a user or host token set by SetUser or SetHost names its
// account; any other shape names none.
func TestAccount(t *testing.T) {
	var user, host Claims
	user.SetUser("alice", "admin")
	host.SetHost("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "aa:bb:cc:dd:ee:ff")
	if name, isUser, ok := user.Account(); name != "alice" || !isUser || !ok {
		t.Errorf("user token: %q %v %v", name, isUser, ok)
	}
	if name, isUser, ok := host.Account(); name != "3f2504e0-4f89-11d3-9a0c-0305e82c3301" || isUser || !ok {
		t.Errorf("host token: %q %v %v", name, isUser, ok)
	}
	for name, change := range map[string]func(*Claims){
		"audience":         func(c *Claims) { c.Audience = jwt.ClaimStrings{"totp"} },
		"network":          func(c *Claims) { c.Network = "net-1" },
		"both kinds":       func(c *Claims) { c.HostID = "h1" },
		"other subject":    func(c *Claims) { c.Subject = "user|bob" },
		"access token":     func(c *Claims) { c.TokenType = "access_token" },
		"no subject":       func(c *Claims) { c.Subject = "" },
		"host with a role": func(c *Claims) { *c = host; c.Role = "admin" },
	} {
		c := user
		change(&c)
		if _, _, ok := c.Account(); ok {
			t.Errorf("%s: %+v names an account", name, c)
		}
	}
}

// TestClaimsJSON: the claims are written in Netmaker's field names, the
// registered claims after them.
func TestClaimsJSON(t *testing.T) {
	c := Claims{RegisteredClaims: jwt.RegisteredClaims{Issuer: Issuer, ExpiresAt: jwt.NewNumericDate(time.Unix(1700000000, 0))}}
	c.SetUser("alice", "admin")
	b, _ := json.Marshal(c)
	want := `{"Role":"admin","UserName":"alice","TokenType":"user_id_token","iss":"Netmaker","sub":"user|alice","exp":1700000000}`
	if string(b) != want {
		t.Errorf("%s, want %s", b, want)
	}
}

// TestNewParser: only HS256 tokens of Netmaker's issuer with an expiry
// parse.
func TestNewParser(t *testing.T) {
	now := time.Unix(1700000000, 0)
	secret := []byte("nmtoken-test-secret-0123456789abcdef")
	key := func(*jwt.Token) (any, error) { return secret, nil }
	sign := func(m jwt.SigningMethod, c Claims) string {
		s, err := jwt.NewWithClaims(m, c).SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	good := Claims{RegisteredClaims: jwt.RegisteredClaims{Issuer: Issuer, ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}}
	good.SetUser("alice", "admin")
	p := NewParser(func() time.Time { return now })
	if _, err := p.ParseWithClaims(sign(jwt.SigningMethodHS256, good), &Claims{}, key); err != nil {
		t.Errorf("a good token: %v", err)
	}
	noExpiry, otherIssuer := good, good
	noExpiry.ExpiresAt = nil
	otherIssuer.Issuer = "nmauth"
	for name, tok := range map[string]string{
		"HS512":        sign(jwt.SigningMethodHS512, good),
		"no expiry":    sign(jwt.SigningMethodHS256, noExpiry),
		"other issuer": sign(jwt.SigningMethodHS256, otherIssuer),
	} {
		if _, err := p.ParseWithClaims(tok, &Claims{}, key); err == nil {
			t.Errorf("%s parsed", name)
		}
	}
}
