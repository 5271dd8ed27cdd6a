package netmaker

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v4"
	"github.com/google/uuid"
	"github.com/gravitl/netmaker/database"
	"github.com/gravitl/netmaker/logic"
	"github.com/gravitl/netmaker/models"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

// liveWithin is how soon a change made in Netmaker must be seen.
const liveWithin = 5 * time.Second

// TestLiveFrontSQLite: nmauthd serves in front of an unchanged Netmaker
// whose SQLite database Netmaker's own packages wrote; see frontOfNetmaker.
func TestLiveFrontSQLite(t *testing.T) {
	binaries(t)
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("DATABASE", "sqlite")
	f := writeNetmaker(t)
	src := filepath.Join(dir, "data", "netmaker.db")
	fileSum := func() string {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		s := sha256.Sum256(b)
		return hex.EncodeToString(s[:])
	}
	frontOfNetmaker(t, f, dir, src, fileSum)
}

// TestLiveFrontPostgres: the same on Netmaker's PostgreSQL backend, in a
// schema of the test's own.
func TestLiveFrontPostgres(t *testing.T) {
	dsn := os.Getenv("NMAUTH_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("NMAUTH_TEST_POSTGRES is not set in CI")
		}
		t.Skip(`NMAUTH_TEST_POSTGRES is not set; to run: export NMAUTH_TEST_POSTGRES="$(bash .ci/postgres)"`)
	}
	binaries(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal("NMAUTH_TEST_POSTGRES is not a URL")
	}
	schema := "netmaker_live_" + strings.ToLower(rand.Text()[:12])
	pass, _ := u.User.Password()
	t.Setenv("DATABASE", "postgres")
	t.Setenv("SQL_HOST", u.Hostname())
	t.Setenv("SQL_PORT", u.Port())
	t.Setenv("SQL_USER", u.User.Username())
	t.Setenv("SQL_PASS", pass)
	t.Setenv("SQL_DB", strings.TrimPrefix(u.Path, "/"))
	t.Setenv("SQL_SSL_MODE", u.Query().Get("sslmode")+" search_path="+schema)
	createSchema(t, dsn, schema)
	f := writeNetmaker(t)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	frontOfNetmaker(t, f, t.TempDir(), u.String(), nil)
}

// netmakerTables hashes every record of Netmaker's tables that nmauthd
// reads, the JWT secret's included.
func netmakerTables(t *testing.T) string {
	t.Helper()
	h := sha256.New()
	h.Write([]byte(netmakerChecksum(t)))
	v, err := database.FetchRecord(database.SERVERCONF_TABLE_NAME, "nm-jwt-secret")
	if err != nil {
		t.Fatal(err)
	}
	h.Write([]byte(v))
	return hex.EncodeToString(h.Sum(nil))
}

// netmakerAccepts checks a user token as Netmaker's server does, with its
// own logic.VerifyUserToken over its database, and returns what it says.
func netmakerAccepts(t *testing.T, token string) (name string, superAdmin bool) {
	t.Helper()
	name, superAdmin, _, err := logic.VerifyUserToken(token)
	if err != nil || name == "" {
		t.Fatalf("Netmaker's VerifyUserToken refuses the token: %q %v", name, err)
	}
	return name, superAdmin
}

// netmakerHostToken checks a host token under Netmaker's secret with its
// models.Claims and its JWT library (VerifyHostToken returns the claims of
// any token it can decode, so the signature is checked here) and with
// VerifyHostToken, which its host routes call.
func netmakerHostToken(t *testing.T, token string) models.Claims {
	t.Helper()
	secret, err := logic.FetchJWTSecret()
	if err != nil {
		t.Fatal(err)
	}
	var c models.Claims
	tok, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return []byte(secret), nil })
	if err != nil || !tok.Valid {
		t.Fatalf("Netmaker's secret does not verify the host token: %v", err)
	}
	id, _, _, err := logic.VerifyHostToken(token)
	if err != nil || id != c.ID {
		t.Fatalf("Netmaker's VerifyHostToken: %q %v", id, err)
	}
	return c
}

// eventually retries check until it holds, for at most liveWithin. It
// tries once a second, as a person would: a check logs in, and nmauthd
// limits the attempts of one client address (a burst of 20, then one a
// second, right logins included), so that polling faster would be
// throttled (429) before the change it waits for is seen.
func eventually(t *testing.T, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(liveWithin)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not seen within %v", what, liveWithin)
		}
		time.Sleep(time.Second)
	}
}

// frontOfNetmaker runs nmauthd serve --netmaker-db over Netmaker's
// database src: every account logs in as it did to Netmaker and gets a
// token Netmaker's own checks accept, with the role Netmaker gives it;
// nmauthd writes nothing of Netmaker's (fileSum, when not nil, hashes its
// SQLite file); changes made in Netmaker are seen within liveWithin.
func frontOfNetmaker(t *testing.T, f netmakerFleet, dir, src string, fileSum func() string) {
	logic.SetJWTSecret() // Netmaker's server makes its secret so at start
	secret := make([]byte, 32)
	rand.Read(secret)
	env := append(os.Environ(), "MASTER_KEY="+masterKey, "NMAUTH_SECRET="+hex.EncodeToString(secret), "NMAUTH_ENV=")
	tables := netmakerTables(t)
	var file string
	if fileSum != nil {
		file = fileSum()
	}
	s := serveDB(t, dir, filepath.Join(dir, "nmauth.db"), env, "netmaker", "--netmaker-db="+src)

	for range 2 { // the second login is on the hash the first one upgraded
		login := s.success(s.post("/api/hosts/adm/authenticate", "", models.AuthParams{MacAddress: f.mac.String(), ID: f.hostID, Password: f.hostSecret}))
		c := netmakerHostToken(t, authToken(t, login))
		if c.ID != f.hostID || c.MacAddress != f.mac.String() || c.Subject != "node|"+f.hostID || c.ExpiresAt.Sub(c.IssuedAt.Time) != 15*time.Minute {
			t.Errorf("host claims %+v", c)
		}
		if st, who := s.whoami(authToken(t, login)); st != http.StatusOK || who != "host:"+f.hostID {
			t.Errorf("nmauthd's bearer check of the host token: %d %s", st, who)
		}
	}
	if st, _ := s.post("/api/nodes/adm/net-1/authenticate", "", models.AuthParams{ID: f.hostID, Password: f.hostSecret}); st != http.StatusOK {
		t.Errorf("node login in the host's network (Netmaker's nodes): %d", st)
	}
	if st, _ := s.post("/api/nodes/adm/net-2/authenticate", "", models.AuthParams{ID: f.hostID, Password: f.hostSecret}); st != http.StatusForbidden {
		t.Errorf("node login in another network: %d, want 403", st)
	}

	userLogin := func(name, password string) (int, string) {
		st, body := s.post("/api/users/adm/authenticate", "", models.UserAuthParams{UserName: name, Password: password})
		if st != http.StatusOK {
			return st, ""
		}
		return st, authToken(t, s.success(st, body))
	}
	for _, tc := range []struct {
		name  string
		super bool
	}{{"alice", true}, {"erin", false}} {
		_, tok := userLogin(tc.name, f.passwords[tc.name])
		if name, super := netmakerAccepts(t, tok); name != tc.name || super != tc.super {
			t.Errorf("Netmaker reads %s's token as %s, super-admin %v", tc.name, name, super)
		}
	}
	for _, name := range []string{"carol", "dave"} { // disabled; SSO only
		if st, _ := userLogin(name, f.passwords[name]); st != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", name, st)
		}
	}

	// bob has TOTP on in Netmaker: its secret, and a code only once.
	partial := into[models.PartialUserLoginResponse](t,
		s.success(s.post("/api/users/adm/authenticate", "", models.UserAuthParams{UserName: "bob", Password: f.passwords["bob"]})))
	now := time.Now()
	c, err := totp.GenerateCodeCustom(f.totpSecret, now, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := s.post("/api/users/bob/auth/verify-totp", partial.PreAuthToken, models.UserTOTPVerificationParams{TOTP: c}); st != http.StatusOK {
		t.Fatalf("bob's code: %d", st)
	}
	// nmauth's pre-auth token is no session, for Netmaker either.
	if _, _, _, err := logic.VerifyUserToken(partial.PreAuthToken); err == nil {
		t.Error("Netmaker accepts nmauth's pre-auth token")
	}
	again := into[models.PartialUserLoginResponse](t,
		s.success(s.post("/api/users/adm/authenticate", "", models.UserAuthParams{UserName: "bob", Password: f.passwords["bob"]})))
	if st, _ := s.post("/api/users/bob/auth/verify-totp", again.PreAuthToken, models.UserTOTPVerificationParams{TOTP: c}); st != http.StatusUnauthorized {
		t.Errorf("bob's code a second time: %d, want 401", st)
	}

	// erin turns TOTP on at nmauthd, with the token Netmaker accepts.
	_, erinTok := userLogin("erin", f.passwords["erin"])
	init := into[models.TOTPInitiateResponse](t, s.success(s.post("/api/users/erin/auth/init-totp", erinTok, nil)))
	if st, body := s.post("/api/users/erin/auth/complete-totp", erinTok, models.UserTOTPVerificationParams{
		OTPAuthURL: init.OTPAuthURL, OTPAuthURLSignature: init.OTPAuthURLSignature, TOTP: code(t, init.OTPAuthURL, time.Now()),
	}); st != http.StatusOK {
		t.Fatalf("erin's complete-totp: %d %s", st, body)
	}
	erin := into[models.PartialUserLoginResponse](t,
		s.success(s.post("/api/users/adm/authenticate", "", models.UserAuthParams{UserName: "erin", Password: f.passwords["erin"]})))
	if erin.PreAuthToken == "" {
		t.Fatal("erin's next login asks no code")
	}
	verified := s.success(s.post("/api/users/erin/auth/verify-totp", erin.PreAuthToken, models.UserTOTPVerificationParams{TOTP: code(t, init.OTPAuthURL, time.Now().Add(30*time.Second))}))
	netmakerAccepts(t, authToken(t, verified))

	if netmakerTables(t) != tables || fileSum != nil && fileSum() != file {
		t.Fatal("nmauthd changed Netmaker's database")
	}

	// Changes made in Netmaker, by its own database package.
	put := func(u models.User) {
		b, _ := json.Marshal(u)
		if err := database.Insert(u.UserName, string(b), database.USERS_TABLE_NAME); err != nil {
			t.Fatal(err)
		}
	}
	frank := models.User{UserName: "frank", Password: netmakerHash(t, "frank-password-6"), AuthType: models.BasicAuth, PlatformRoleID: models.AdminRole}
	put(frank)
	eventually(t, "a user created in Netmaker", func() bool {
		st, tok := userLogin("frank", "frank-password-6")
		return st == http.StatusOK && tok != ""
	})
	frank.Password = netmakerHash(t, "frank-password-7")
	put(frank)
	eventually(t, "a new password set in Netmaker", func() bool {
		old, _ := userLogin("frank", "frank-password-6")
		st, _ := userLogin("frank", "frank-password-7")
		return old == http.StatusUnauthorized && st == http.StatusOK
	})
	frank.AccountDisabled = true
	put(frank)
	eventually(t, "a user disabled in Netmaker", func() bool {
		st, _ := userLogin("frank", "frank-password-7")
		return st == http.StatusUnauthorized
	})
	if err := database.DeleteRecord(database.USERS_TABLE_NAME, "alice"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a user deleted in Netmaker", func() bool {
		st, _ := userLogin("alice", f.passwords["alice"])
		return st == http.StatusUnauthorized
	})
	hostID, hostSecret := uuid.New(), rand.Text()
	h := models.Host{ID: hostID, Name: "edge-2", HostPass: netmakerHash(t, hostSecret), MacAddress: f.mac}
	b, _ := json.Marshal(h)
	if err := database.Insert(hostID.String(), string(b), database.HOSTS_TABLE_NAME); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a host registered in Netmaker", func() bool {
		st, _ := s.post("/api/hosts/adm/authenticate", "", models.AuthParams{MacAddress: f.mac.String(), ID: hostID.String(), Password: hostSecret})
		return st == http.StatusOK
	})
}

// TestLiveFrontSSO: in front of Netmaker, single sign-on at nmauthd logs
// in the Netmaker user of the identity, and Netmaker accepts the token:
// the user Netmaker's own single sign-on made (its
// external_identity_provider_id is the identity's subject), and a user
// named by the identity's verified e-mail. An identity with no Netmaker
// user gets no token. The provider is zitadel/oidc's example.
func TestLiveFrontSSO(t *testing.T) {
	binaries(t)
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("DATABASE", "sqlite")
	writeNetmaker(t) // dave signed in through Netmaker's single sign-on
	logic.SetJWTSecret()
	ann := models.User{UserName: "ann@example.com", AuthType: models.OAuth, PlatformRoleID: models.AdminRole}
	b, _ := json.Marshal(ann)
	if err := database.Insert(ann.UserName, string(b), database.USERS_TABLE_NAME); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	callback := "http://" + addr + "/api/oauth/callback"
	issuer := startProviderWith(t, "live-sso", callback, `{
		"id1": {"ID": "id1", "Username": "ann", "Password": "op-password-1", "Email": "ann@example.com", "EmailVerified": true, "PreferredLanguage": "en"},
		"provider-subject-of-dave": {"ID": "provider-subject-of-dave", "Username": "dave", "Password": "op-password-2", "Email": "dave@elsewhere.example", "EmailVerified": true, "PreferredLanguage": "en"},
		"id3": {"ID": "id3", "Username": "bea", "Password": "op-password-3", "Email": "bea@example.com", "EmailVerified": true, "PreferredLanguage": "en"}}`)
	secret := make([]byte, 32)
	rand.Read(secret)
	env := append(os.Environ(), "MASTER_KEY="+masterKey, "NMAUTH_SECRET="+hex.EncodeToString(secret), "NMAUTH_ENV=")
	s := serveDB(t, dir, filepath.Join(dir, "nmauth.db"), env, "netmaker", "--addr="+addr,
		"--netmaker-db="+filepath.Join(dir, "data", "netmaker.db"), "--sso-issuer="+issuer, "--sso-client-id=live-sso",
		"--sso-redirect-url="+callback, "NMAUTH_SSO_CLIENT_SECRET=sso-client-secret")
	waitSSO(t, s)

	for _, tc := range []struct{ user, password, want string }{
		{"ann", "op-password-1", "ann@example.com"},
		{"dave", "op-password-2", "dave"},
		{"bea", "op-password-3", ""},
	} {
		status, got := browserSSO(t, s, issuer, tc.user, tc.password)
		if tc.want == "" {
			if status != http.StatusForbidden || got.Get("authToken") != "" {
				t.Errorf("%s, no Netmaker user: %d %v, want 403 and no token", tc.user, status, got)
			}
			continue
		}
		tok := got.Get("authToken")
		if tok == "" {
			t.Fatalf("%s: %d, no token", tc.user, status)
		}
		if name, _ := netmakerAccepts(t, tok); name != tc.want {
			t.Errorf("%s: Netmaker reads the token as %q, want %q", tc.user, name, tc.want)
		}
	}
}

// browserSSO is a browser's single sign-on at nmauthd: it starts at
// /api/oauth/login, logs in at the provider, and returns the status of
// nmauthd's callback and the login in the fragment it redirects to.
func browserSSO(t *testing.T, s *server, issuer, user, password string) (int, url.Values) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	var done url.Values
	client := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Fragment != "" {
			done, _ = url.ParseQuery(req.URL.Fragment)
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp, err := client.Get(s.url + "/api/oauth/login")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := authRequestID.FindSubmatch(body)
	if m == nil {
		t.Fatalf("no login form at the provider: %.300s", body)
	}
	resp, err = client.PostForm(issuer+"/login/username", url.Values{"id": {string(m[1])}, "username": {user}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, done
}
