package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserAccessTokens drives the demo page in headless Chromium: the
// logged-in user creates a read-only access token, which the page shows
// once and which the server accepts; deletes it, after which the server
// refuses it; and logs out, which revokes the session's token on the
// server.
func TestBrowserAccessTokens(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		requireCI(t, "the browser test needs Chromium at "+chromiumPath+
			" (Debian: apt-get install --no-install-recommends chromium chromium-driver)")
	}
	dir := t.TempDir()
	env := baseEnv()
	d := startDaemon(t, dir, env, "--dev", "--db", filepath.Join(dir, "nmauth.db"))
	vars := devVariables(t, d.waitStdout("DEMO_MASTER_KEY="))
	user, password := vars["DEMO_USER"], vars["DEMO_PASSWORD"]
	p := openPage(t, d.url+"/")

	p.logInUser(user, password, "Logged in as "+user+".")
	p.do("wait for the access tokens", chromedp.WaitVisible(chromedp.ID("token-add-form")))
	p.do("name the token", chromedp.SendKeys(chromedp.ID("token-name"), "ci"), chromedp.Click(chromedp.ID("token-read-only")))
	p.act("create the token", chromedp.Click(chromedp.CSS("#token-add-form button[type=submit]")), "Access token ci created.")
	token := p.text("token-secret")
	if !strings.HasPrefix(token, "nmauth_at_") {
		t.Fatalf("the page shows %q as the new token", token)
	}
	rows := evaluate[[]map[string]string](p, `[...document.querySelectorAll("#token-list tbody tr")].map(tr =>
		Object.fromEntries([...tr.querySelectorAll("td[data-field]")].map(td => [td.dataset.field, td.textContent])))`)
	if len(rows) != 1 || rows[0]["name"] != "ci" || rows[0]["scope"] != "read-only" || rows[0]["lastUsed"] != "never" {
		t.Fatalf("the page lists %v, want the read-only token ci, never used", rows)
	}
	if who := decode[whoWithScope](t, d.call("GET", "/api/whoami", token, nil), http.StatusOK); who.Kind != "access_token" || !who.ReadOnly {
		t.Fatalf("whoami with the page's token: %+v", who)
	}

	p.act("delete the token", chromedp.Click(chromedp.CSS(`#token-list button[data-action=delete]`)), "Access token ci deleted.")
	if p.text("token-secret") != "" || !evaluate[bool](p, `!document.getElementById("token-none").hidden`) {
		t.Error("after the delete the page still shows the token or a list")
	}
	if r := d.call("GET", "/api/whoami", token, nil); r.status != http.StatusUnauthorized {
		t.Fatalf("the deleted token answers %d, want 401", r.status)
	}

	p.act("log out", chromedp.Click(chromedp.ID("logout")), "the server revoked the token")
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(d.stderr.String(), "event.type=logout") {
		if time.Now().After(deadline) {
			t.Fatal("the server logged no logout")
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.noTokenInPage()
	p.checkConsole()
}
