package main

import (
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
)

// ssoProvider starts a real OpenID provider, zitadel/oidc's op package
// with its example storage and login page, over loopback, with one user
// (ann, op-password-1) and one client for a server whose callback is
// redirectURL. It returns the issuer.
func ssoProvider(t *testing.T, clientID, redirectURL string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String()
	path := filepath.Join(t.TempDir(), "users.json")
	users := `{"id1": {"ID": "id1", "Username": "ann", "Password": "op-password-1", "Email": "ann@example.com", "EmailVerified": true, "PreferredLanguage": "en"}}`
	if err := os.WriteFile(path, []byte(users), 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := storage.StoreFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	storage.RegisterClients(storage.WebClient(clientID, "sso-client-secret", redirectURL))
	srv := httptest.NewUnstartedServer(exampleop.SetupServer(issuer, storage.NewStorage(store), nil, false))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return issuer
}

// freeAddr is a loopback address with a port free now, for a server whose
// address the provider must know before it starts.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// TestBrowserSSO drives the demo page in headless Chromium through single
// sign-on: the page shows its SSO button, the provider's login page takes
// the provider's user and password, and the page comes back logged in as
// the user nmauthd made for the identity (--sso-create-users), with the
// login gone from the address bar.
func TestBrowserSSO(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		requireCI(t, "the browser test needs Chromium at "+chromiumPath+
			" (Debian: apt-get install --no-install-recommends chromium chromium-driver)")
	}
	addr := freeAddr(t)
	issuer := ssoProvider(t, "nmauthd-browser", "http://"+addr+"/api/oauth/callback")
	dir := t.TempDir()
	env := baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SSO_CLIENT_SECRET=sso-client-secret")
	db := filepath.Join(dir, "nmauth.db")
	seed(t, dir, env, db)
	d := startDaemon(t, dir, env, "--db", db, "--addr", addr, "--sso-issuer", issuer, "--sso-client-id", "nmauthd-browser",
		"--sso-redirect-url", "http://"+addr+"/api/oauth/callback", "--sso-create-users")
	p := openPage(t, d.url+"/")
	p.do("wait for the SSO button", chromedp.WaitVisible(chromedp.ID("sso-login-start")))
	p.do("log in at the provider",
		chromedp.Click(chromedp.ID("sso-login-start")),
		chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), "ann"),
		chromedp.SendKeys(chromedp.ID("password"), "op-password-1"),
		chromedp.Submit(chromedp.ID("password")),
		chromedp.WaitVisible(chromedp.ID("session")))
	// The session shows before the login's last step has said so.
	for deadline := time.Now().Add(browserStepLimit); !strings.Contains(p.text("status"), "Logged in as ann with SSO."); {
		if time.Now().After(deadline) {
			t.Fatalf("the page says %q", p.text("status"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.wantPrincipal(map[string]string{"kind": "user", "name": "ann", "totp": "no"})
	if hash := evaluate[string](p, "location.hash"); hash != "" {
		t.Errorf("the login stays in the address bar: %q", hash)
	}
	p.noTokenInPage()
	p.checkConsole()
}

// TestSSOLinkCommand links a provider's identity to an existing user with
// "nmauthd user sso-link", and the browser's SSO login then logs in as
// that user, though --sso-create-users is off.
func TestSSOLinkCommand(t *testing.T) {
	addr := freeAddr(t)
	callback := "http://" + addr + "/api/oauth/callback"
	issuer := ssoProvider(t, "nmauthd-link", callback)
	dir := t.TempDir()
	env := baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SSO_CLIENT_SECRET=sso-client-secret")
	db := filepath.Join(dir, "nmauth.db")
	a := seed(t, dir, env, db)
	if r := runNmauthd(t, dir, env, "", "--db", db, "user", "sso-link", "nobody", issuer, "id1"); r.code != 1 {
		t.Fatalf("sso-link of an unknown user: exit %d", r.code)
	}
	out := mustRun(t, dir, env, "", "--db", db, "user", "sso-link", a.user, issuer, "id1")
	if !strings.Contains(out, a.user) {
		t.Fatalf("sso-link printed %q", out)
	}
	d := startDaemon(t, dir, env, "--db", db, "--addr", addr, "--sso-issuer", issuer, "--sso-client-id", "nmauthd-link",
		"--sso-redirect-url", callback)
	if got := ssoLogin(t, d.url, issuer, "ann", "op-password-1"); got != a.user {
		t.Fatalf("the SSO login logged in as %q, want %q", got, a.user)
	}
}

var authRequestID = regexp.MustCompile(`name="id" value="([^"]+)"`)

// ssoLogin is a browser without JavaScript: it starts the SSO login at
// base, logs in at the provider, follows the redirects back, and returns
// the user name the page was sent in the fragment, "" for none.
func ssoLogin(t *testing.T, base, issuer, user, password string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := client.Get(base + "/api/oauth/login")
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
	v, _ := url.ParseQuery(resp.Request.URL.Fragment)
	return v.Get("userName")
}
