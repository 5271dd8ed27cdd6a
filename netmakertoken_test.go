package nmauth_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/nmauth/nmauth"
)

// testHostID and testHostPassword are a Netmaker host: a UUID, and 32
// base32 characters as netclient draws them.
var (
	testHostID       = testHostIDs[0]
	testHostPassword = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
)

// netmakerSecret stands for the privatekey of Netmaker's nm-jwt-secret.
var netmakerSecret = []byte("Netmaker-server-secret-0123456789abcdefghijklmnopqrstuvwxyz-0123")

// netmakerUserClaims and netmakerHostClaims are Netmaker v1.4.0's
// models.UserClaims and models.Claims, which its server parses with the
// secret alone: written here from their definition, so that the test
// reads the tokens as Netmaker does and not as the package does.
type netmakerUserClaims struct {
	Role           string
	UserName       string
	Api            string
	TokenType      string
	RacAutoDisable bool
	jwt.RegisteredClaims
}

type netmakerHostClaims struct {
	ID         string
	MacAddress string
	Network    string
	jwt.RegisteredClaims
}

// parseAsNetmaker checks a token as Netmaker's VerifyUserToken and
// VerifyHostToken do: HS256 under its secret, exp and iat in force.
func parseAsNetmaker(t *testing.T, token string, c jwt.Claims, now time.Time) {
	t.Helper()
	_, err := jwt.NewParser(jwt.WithTimeFunc(func() time.Time { return now }), jwt.WithIssuedAt()).
		ParseWithClaims(token, c, func(*jwt.Token) (any, error) { return netmakerSecret, nil })
	if err != nil {
		t.Fatalf("Netmaker refuses %s: %v", token, err)
	}
}

// withNetmakerTokens has the Authenticator mint Netmaker's tokens; the
// role of every user is "admin", and "Alice" is how Netmaker keys alice.
func withNetmakerTokens(c *nmauth.Config) {
	c.Wire = nmauth.WireNetmaker
	c.UserTokenTTL = 12 * time.Hour
	c.NetmakerSecret = netmakerSecret
	c.NetmakerUser = func(name string) (string, string, error) {
		if name == "alice" {
			return "Alice", "admin", nil
		}
		return name, "service-user", nil
	}
}

func TestNetmakerTokensNetmakerAccepts(t *testing.T) {
	f := newFixture(t, withNetmakerTokens)
	f.addUser("alice", "alice-password-1")
	f.addHost(testHostID, "02:42:ac:11:00:07", testHostPassword)
	ctx := context.Background()

	user := f.userToken("alice", "alice-password-1")
	var uc netmakerUserClaims
	parseAsNetmaker(t, user, &uc, f.clock.Now())
	if uc.UserName != "Alice" || uc.Role != "admin" || uc.TokenType != "user_id_token" || uc.Issuer != "Netmaker" ||
		uc.Subject != "user|Alice" || uc.ExpiresAt.Sub(uc.IssuedAt.Time) != 12*time.Hour {
		t.Errorf("user claims %+v, want Netmaker's user_id_token for Alice, role admin, 12 h", uc)
	}
	p, err := f.auth.CheckBearer(ctx, user)
	if err != nil || p.Kind != nmauth.KindUser || p.Name != "alice" {
		t.Errorf("CheckBearer(user token) = %+v, %v; want user alice", p, err)
	}

	r := f.do("/api/hosts/adm/authenticate", "", map[string]string{"id": testHostID, "password": testHostPassword, "macaddress": "02:42:ac:11:00:07"})
	wantStatus(t, r, http.StatusOK)
	host, _ := r.field(t, "AuthToken").(string)
	var hc netmakerHostClaims
	parseAsNetmaker(t, host, &hc, f.clock.Now())
	if hc.ID != testHostID || hc.MacAddress != "02:42:ac:11:00:07" || hc.Network != "" || hc.Subject != "node|"+testHostID ||
		hc.Issuer != "Netmaker" || hc.ExpiresAt.Sub(hc.IssuedAt.Time) != 15*time.Minute {
		t.Errorf("host claims %+v, want Netmaker's for %s, 15 min", hc, testHostID)
	}
	if p, err := f.auth.CheckBearer(ctx, host); err != nil || p.Kind != nmauth.KindHost || p.Name != testHostID {
		t.Errorf("CheckBearer(host token) = %+v, %v; want host %s", p, err, testHostID)
	}

	// nmauth's own routes take the user's token: TOTP enrollment.
	secret, _ := f.enroll("alice", user)
	pre := f.preAuthToken("alice", "alice-password-1")
	r = f.verifyTOTP("alice", pre, f.code(secret, 0))
	wantStatus(t, r, http.StatusOK)
	parseAsNetmaker(t, r.field(t, "AuthToken").(string), &netmakerUserClaims{}, f.clock.Now())

	// A disable at nmauth ends the token here (Netmaker checks its own).
	if err := f.auth.Admin().DisableUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.auth.CheckBearer(ctx, user); !errors.Is(err, nmauth.ErrUnauthenticated) {
		t.Errorf("CheckBearer after disable = %v, want ErrUnauthenticated", err)
	}
}

// TestNetmakerTokensRefused holds the rules that keep other kinds out of
// the bearer check: what Netmaker mints itself, its pre-auth tokens,
// nmauth's pre-auth token, a token of another secret or mixed claims.
func TestNetmakerTokensRefused(t *testing.T) {
	f := newFixture(t, withNetmakerTokens)
	f.addUser("bob", "bob-password-3")
	// bob's generation, from a token he got, so that each token below
	// fails by its rule alone.
	var minted struct {
		Gen uint64 `json:"gen"`
		jwt.RegisteredClaims
	}
	parseAsNetmaker(t, f.userToken("bob", "bob-password-3"), &minted, f.clock.Now())
	gen := minted.Gen
	now := f.clock.Now()
	sign := func(c jwt.Claims, key []byte) string {
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	reg := func(sub string) jwt.RegisteredClaims {
		return jwt.RegisteredClaims{Issuer: "Netmaker", Subject: sub, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)), ID: "x"}
	}
	type withGen struct {
		netmakerUserClaims
		Gen uint64 `json:"gen"`
	}
	type hostGen struct {
		netmakerHostClaims
		Gen uint64 `json:"gen"`
	}
	f.addUser("carol", "carol-password-4")
	f.enroll("carol", f.userToken("carol", "carol-password-4"))
	preAuth := reg("bob")
	preAuth.Audience = jwt.ClaimStrings{"auth:mfa"}
	long := withGen{netmakerUserClaims{UserName: "bob", TokenType: "user_id_token", RegisteredClaims: reg("user|bob")}, gen}
	long.ExpiresAt = jwt.NewNumericDate(now.Add(13 * time.Hour))
	for name, tok := range map[string]string{
		"Netmaker's own user token": sign(netmakerUserClaims{UserName: "bob", TokenType: "user_id_token", RegisteredClaims: reg("user|bob")}, netmakerSecret),
		"Netmaker's access token":   sign(withGen{netmakerUserClaims{UserName: "bob", TokenType: "access_token", RegisteredClaims: reg("user|bob")}, gen}, netmakerSecret),
		"Netmaker's pre-auth token": sign(preAuth, netmakerSecret),
		"another secret":            sign(withGen{netmakerUserClaims{UserName: "bob", TokenType: "user_id_token", RegisteredClaims: reg("user|bob")}, gen}, testSecret(9)),
		"subject of another user":   sign(withGen{netmakerUserClaims{UserName: "bob", TokenType: "user_id_token", RegisteredClaims: reg("user|alice")}, gen}, netmakerSecret),
		"a node token of Netmaker":  sign(hostGen{netmakerHostClaims{ID: testHostID, Network: "net-1", RegisteredClaims: reg("node|" + testHostID)}, gen}, netmakerSecret),
		"longer than a user token":  sign(long, netmakerSecret),
		"nmauth's pre-auth token":   f.preAuthToken("carol", "carol-password-4"),
	} {
		if _, err := f.auth.CheckBearer(context.Background(), tok); !errors.Is(err, nmauth.ErrUnauthenticated) {
			t.Errorf("%s: CheckBearer = %v, want ErrUnauthenticated", name, err)
		}
	}
	// The same claims with gen under Netmaker's secret pass: the refusals
	// above are the rules', not a broken check.
	ok := sign(withGen{netmakerUserClaims{UserName: "bob", TokenType: "user_id_token", RegisteredClaims: reg("user|bob")}, gen}, netmakerSecret)
	if _, err := f.auth.CheckBearer(context.Background(), ok); err != nil {
		t.Errorf("a well-formed token: CheckBearer = %v", err)
	}
}

func TestNetmakerTokensConfig(t *testing.T) {
	user := func(string) (string, string, error) { return "", "", nil }
	for name, c := range map[string]nmauth.Config{
		"short secret":    {NetmakerSecret: []byte("short"), NetmakerUser: user},
		"no user":         {NetmakerSecret: netmakerSecret},
		"user, no secret": {NetmakerUser: user},
	} {
		c.Store, c.Secrets = nmauth.NewMemoryStore(), [][]byte{testSecret(1)}
		_, err := nmauth.New(c)
		if err == nil || !strings.Contains(err.Error(), "Config.Netmaker") {
			t.Errorf("%s: New = %v, want an error naming Config.Netmaker", name, err)
		}
	}
}

// lifetimeKey holds, in a login's context, the lifetime a test's
// Config.UserTokenLifetime answers.
type lifetimeKey struct{}

// TestUserTokenLifetime: Config.UserTokenLifetime picks each user token's
// lifetime from the context of the login that earns it (a password login,
// verify-totp, an extension's login), at most Config.UserTokenTTL, in
// Netmaker's format, which Netmaker's parser then reads; an error fails
// the login as a Store fault does.
func TestUserTokenLifetime(t *testing.T) {
	errSettings := errors.New("settings unreadable")
	f := newFixture(t, withNetmakerTokens, func(c *nmauth.Config) {
		c.UserTokenLifetime = func(ctx context.Context, name string) (time.Duration, error) {
			if name != "alice" {
				t.Errorf("UserTokenLifetime asked about %q", name)
			}
			d, _ := ctx.Value(lifetimeKey{}).(time.Duration)
			if d < 0 {
				return 0, errSettings
			}
			return d, nil
		}
	})
	f.addUser("alice", "alice-password-1")
	in := func(d time.Duration) context.Context {
		return context.WithValue(context.Background(), lifetimeKey{}, d)
	}
	lifetime := func(what, token string) time.Duration {
		t.Helper()
		var c netmakerUserClaims
		parseAsNetmaker(t, token, &c, f.clock.Now())
		p, err := f.auth.CheckBearer(context.Background(), token)
		if err != nil || p.Kind != nmauth.KindUser {
			t.Fatalf("%s: CheckBearer = %+v, %v", what, p, err)
		}
		if d := p.ExpiresAt.Sub(p.IssuedAt); d != c.ExpiresAt.Sub(c.IssuedAt.Time) {
			t.Fatalf("%s: the Principal lives %v, the token says %v", what, d, c.ExpiresAt.Sub(c.IssuedAt.Time))
		}
		return c.ExpiresAt.Sub(c.IssuedAt.Time)
	}

	for _, tc := range []struct {
		name     string
		ask, got time.Duration
	}{
		{"shorter", 30 * time.Minute, 30 * time.Minute},
		{"longer than UserTokenTTL", 48 * time.Hour, 12 * time.Hour},
		{"no answer", 0, 12 * time.Hour},
	} {
		login, err := f.auth.LoginUser(in(tc.ask), "alice", "alice-password-1")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if d := lifetime(tc.name, login.AuthToken); d != tc.got {
			t.Errorf("%s: the token lives %v, want %v", tc.name, d, tc.got)
		}
	}
	// A fault of the hook is the server's: each login answers it, none
	// counts against alice's right password, and once the hook answers
	// again so does her next login.
	for i := range 12 {
		if _, err := f.auth.LoginUser(in(-1), "alice", "alice-password-1"); !errors.Is(err, nmauth.ErrStoreUnavailable) {
			t.Fatalf("login %d with UserTokenLifetime failing = %v, want ErrStoreUnavailable", i+1, err)
		}
	}
	if _, err := f.auth.LoginUser(in(30*time.Minute), "alice", "alice-password-1"); err != nil {
		t.Fatalf("alice's login once UserTokenLifetime answers again: %v", err)
	}
	login, err := f.ext.Login(in(20*time.Minute), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if d := lifetime("an extension's login", login.AuthToken); d != 20*time.Minute {
		t.Errorf("an extension's login: the token lives %v, want 20m", d)
	}

	// With TOTP on, verify-totp's context decides, not the password's.
	secret, _ := f.enroll("alice", f.userToken("alice", "alice-password-1"))
	pre, err := f.auth.LoginUser(in(time.Hour), "alice", "alice-password-1")
	if err != nil || pre.PreAuthToken == "" {
		t.Fatalf("LoginUser with TOTP on = %+v, %v", pre, err)
	}
	verified, err := f.auth.VerifyTOTP(in(10*time.Minute), pre.PreAuthToken, "alice", f.code(secret, 0))
	if err != nil {
		t.Fatal(err)
	}
	if d := lifetime("verify-totp", verified.AuthToken); d != 10*time.Minute {
		t.Errorf("verify-totp: the token lives %v, want 10m", d)
	}
}
