package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
)

// TestBrowserPasskeys drives the demo page of nmauthd serve --dev in
// headless Chromium with a virtual authenticator of the DevTools WebAuthn
// domain, which makes and uses passkeys as a platform authenticator with
// user verification would: register a passkey after a password login,
// log in with it as the second factor and then without password, see its
// sign count and last use on the page and in "nmauthd user passkeys",
// reset the user's passkeys from the admin view (which revokes the
// session), log in with the password alone, and add and remove a passkey
// again. Set NMAUTH_PASSKEY_SCREENSHOT to a path to save a picture of the
// page with its passkey after the passwordless login.
func TestBrowserPasskeys(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		requireCI(t, "the browser test needs Chromium at "+chromiumPath+
			" (Debian: apt-get install --no-install-recommends chromium chromium-driver)")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "nmauth.db")
	env := baseEnv()
	d := startDaemon(t, dir, env, "--dev", "--db", db)
	vars := devVariables(t, d.waitStdout("DEMO_MASTER_KEY="))
	user, password := vars["DEMO_USER"], vars["DEMO_PASSWORD"]
	// The passkeys of --dev are for localhost, the one name browsers
	// accept for a page on loopback; the page is opened by that name.
	p := openPage(t, strings.Replace(d.url, "127.0.0.1", "localhost", 1)+"/")
	p.addVirtualAuthenticator()

	p.logInUser(user, password, "Logged in as "+user+".")
	p.do("wait for the passkeys", chromedp.WaitVisible(chromedp.ID("passkey-add-form")))
	if !evaluate[bool](p, `!document.getElementById("passkey-none").hidden`) {
		t.Error("the page does not say the user has no passkey yet")
	}
	p.addPasskey("laptop", "Passkey laptop added. It is your first second factor")
	p.wantPrincipal(map[string]string{"kind": "user", "name": user, "totp": "yes"})
	p.wantPasskeys(map[string]string{"laptop": "never"})

	// The second factor after the password, then the passwordless login.
	p.act("log out", chromedp.Click(chromedp.ID("logout")), "Logged out")
	p.logInUser(user, password, "Password accepted")
	p.act("answer with a passkey", chromedp.Click(chromedp.ID("code-prompt-passkey")),
		"Logged in as "+user+" with a passkey as second factor.")
	p.wantPrincipal(map[string]string{"kind": "user", "name": user, "totp": "yes"})
	p.act("log out", chromedp.Click(chromedp.ID("logout")), "Logged out")
	p.act("log in with a passkey", chromedp.Click(chromedp.ID("passkey-login-start")), "Logged in as "+user+" with a passkey.")
	p.wantPrincipal(map[string]string{"kind": "user", "name": user, "totp": "yes"})
	p.noTokenInPage()
	counts := p.wantPasskeys(map[string]string{"laptop": "used"})
	if counts["laptop"] < 2 {
		t.Errorf("after two logins the page shows sign count %d, want at least 2", counts["laptop"])
	}

	out := mustRun(t, dir, env, "", "--db", db, "user", "passkeys", user)
	row := regexp.MustCompile(`(?m)^laptop\s+\S+\s+\S+\s+` + strconv.Itoa(counts["laptop"]) + `\s+yes\s+[A-Za-z0-9_-]+$`)
	if !strings.HasPrefix(out, "NAME") || !row.MatchString(out) {
		t.Errorf("nmauthd user passkeys printed\n%s\nwant laptop, used, sign count %d, discoverable", out, counts["laptop"])
	}

	// The admin view resets the passkeys, which revokes the session; the
	// password alone logs in again.
	p.do("type the master key", chromedp.SendKeys(chromedp.ID("admin-key"), vars["DEMO_MASTER_KEY"]))
	p.act("open the admin view", chromedp.Click(chromedp.CSS("#admin-key-form button[type=submit]")), "Admin view open.")
	// docs/demo-page.png is this view: a passkey listed, the admin view
	// open. NMAUTH_DEMO_SCREENSHOT=$PWD/docs/demo-page.png makes it anew;
	// without it the screenshot goes to a temporary directory.
	shot := os.Getenv("NMAUTH_DEMO_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "demo-page.png")
	}
	p.screenshot(shot)
	p.act("reset the passkeys", p.adminClick("users", user, "passkeys-reset"), "User "+user+": passkeys reset")
	p.act("refresh the revoked session", chromedp.Click(chromedp.ID("whoami-refresh")), "(HTTP 401)")
	p.logInUser(user, password, "Logged in as "+user+".")
	p.wantPasskeys(map[string]string{})

	// A new passkey is again the first second factor; the login it
	// returns is recent, so the last passkey may go.
	p.addPasskey("phone", "Passkey phone added.")
	p.act("remove the passkey", chromedp.Click(chromedp.CSS(`#passkey-list button[data-action=remove]`)), "Passkey phone removed.")
	p.wantPasskeys(map[string]string{})
	p.checkConsole()
}

// addVirtualAuthenticator gives the page's browser a virtual platform
// authenticator that keeps discoverable passkeys, verifies its user and
// answers at once.
func (p *page) addVirtualAuthenticator() {
	p.t.Helper()
	p.do("add a virtual authenticator", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, webauthn.Enable, webauthn.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, t, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{
			Options: &webauthn.VirtualAuthenticatorOptions{
				Protocol:                    webauthn.AuthenticatorProtocolCtap2,
				Ctap2version:                webauthn.Ctap2versionCtap21,
				Transport:                   webauthn.AuthenticatorTransportInternal,
				HasResidentKey:              true,
				HasUserVerification:         true,
				IsUserVerified:              true,
				AutomaticPresenceSimulation: true,
			},
		})
		return err
	}))
}

// addPasskey names and registers a passkey with the virtual authenticator.
func (p *page) addPasskey(name, want string) {
	p.t.Helper()
	p.clear("passkey-name")
	p.do("name the passkey", chromedp.SendKeys(chromedp.ID("passkey-name"), name))
	p.act("add the passkey", chromedp.Click(chromedp.CSS("#passkey-add-form button[type=submit]")), want)
}

// wantPasskeys checks the page's list of passkeys: their names, and for
// each whether it was never used ("never") or was ("used"); it returns
// their sign counts.
func (p *page) wantPasskeys(want map[string]string) map[string]int {
	p.t.Helper()
	rows := evaluate[[]map[string]string](p, `[...document.querySelectorAll("#passkey-list tbody tr")].map(tr =>
		Object.fromEntries([...tr.querySelectorAll("td[data-field]")].map(td => [td.dataset.field, td.textContent])))`)
	counts := map[string]int{}
	for _, r := range rows {
		use, ok := want[r["name"]]
		if !ok {
			p.t.Errorf("the page lists a passkey %q, want only %v", r["name"], want)
			continue
		}
		if (r["lastUsed"] == "never") != (use == "never") {
			p.t.Errorf("passkey %q last used %q, want %s", r["name"], r["lastUsed"], use)
		}
		n, err := strconv.Atoi(r["signCount"])
		if err != nil {
			p.t.Errorf("passkey %q sign count %q", r["name"], r["signCount"])
		}
		counts[r["name"]] = n
	}
	if len(rows) != len(want) {
		p.t.Errorf("the page lists %d passkeys (%v), want %v", len(rows), rows, want)
	}
	return counts
}
