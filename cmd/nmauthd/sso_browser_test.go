package main

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/nmauth/nmauth/sso/ssotest"
)

// ssoUsers are the users of the tests' provider.
var ssoUsers = []ssotest.User{{Subject: "id1", Name: "ann", Password: "op-password-1", Email: "ann@example.com", EmailVerified: true}}

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
	issuer := ssotest.Start(t, ssoUsers, "nmauthd-browser", "sso-client-secret", "http://"+addr+"/api/oauth/callback")
	dir := t.TempDir()
	env := baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SSO_CLIENT_SECRET=sso-client-secret")
	db := filepath.Join(dir, "nmauth.db")
	seed(t, dir, env, db)
	d := startDaemon(t, dir, env, "--db", db, "--addr", addr, "--demo-page", "--sso-issuer", issuer, "--sso-client-id", "nmauthd-browser",
		"--sso-redirect-url", "http://"+addr+"/api/oauth/callback", "--sso-create-users")
	waitSSO(t, d)
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
	issuer := ssotest.Start(t, ssoUsers, "nmauthd-link", "sso-client-secret", callback)
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
	waitSSO(t, d)
	if got := ssoLogin(t, d.url, issuer, "ann", "op-password-1"); got != a.user {
		t.Fatalf("the SSO login logged in as %q, want %q", got, a.user)
	}
}

// ssoLogin logs in by single sign-on at base, as a browser without
// JavaScript, and returns the user name the page was sent in the URL's
// fragment, "" for none.
func ssoLogin(t *testing.T, base, issuer, user, password string) string {
	t.Helper()
	resp, _ := ssotest.NewBrowser().Login(t, issuer, base+"/api/oauth/login", user, password)
	v, _ := url.ParseQuery(resp.Request.URL.Fragment)
	return v.Get("userName")
}
