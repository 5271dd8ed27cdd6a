package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	pngpkg "image/png"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath is where Debian's chromium package puts the browser.
const chromiumPath = "/usr/bin/chromium"

// browserStepLimit bounds one step of the page; it only keeps a broken page
// from hanging the test run. A login hashes a password, slowly under -race.
const browserStepLimit = time.Minute

// TestBrowserDemoPage drives the page of nmauthd serve --dev in headless
// Chromium as a person would: user login, TOTP enrollment with codes
// computed here from the secret the page shows, log-out, login through the
// code prompt, host login, the admin view with the master key (the demo
// user and host, their state, disable and enable), and the errors of a
// wrong password, a wrong code and a server that is gone. Set
// NMAUTH_DEMO_SCREENSHOT to a path to save a picture of the page while it
// shows the QR code and the admin view.
func TestBrowserDemoPage(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		requireCI(t, "the browser test needs Chromium at "+chromiumPath+
			" (Debian: apt-get install --no-install-recommends chromium chromium-driver)")
	}
	dir := t.TempDir()
	d := startDaemon(t, dir, baseEnv(), "--dev", "--db", filepath.Join(dir, "nmauth.db"))
	vars := devVariables(t, d.waitStdout("DEMO_MASTER_KEY="))
	for _, name := range []string{"DEMO_USER", "DEMO_PASSWORD", "DEMO_HOST", "DEMO_HOST_PASSWORD"} {
		if vars[name] == "" {
			t.Fatalf("serve --dev printed no %s", name)
		}
	}
	user, host := vars["DEMO_USER"], vars["DEMO_HOST"]
	p := openPage(t, d.url+"/")

	p.logInUser(user, vars["DEMO_PASSWORD"], "Logged in as "+user+".")
	p.wantPrincipal(map[string]string{"kind": "user", "name": user, "totp": "no"})

	// The admin view, open beside the session from now on.
	master := vars["DEMO_MASTER_KEY"]
	p.do("type the master key", chromedp.SendKeys(chromedp.ID("admin-key"), master))
	p.act("open the admin view", chromedp.Click(chromedp.CSS("#admin-key-form button[type=submit]")), "Admin view open.")
	p.wantAdminRow("users", user, map[string]string{"state": "enabled", "totp": "off", "recoveryCodes": "0", "locked": "no"})
	p.wantAdminRow("hosts", host, map[string]string{"state": "enabled", "mac": "any", "locked": "no"})
	p.noSecretInPage(master)

	// Enroll with a code computed from the secret as the page shows it.
	p.act("start enrollment", chromedp.Click(chromedp.ID("enroll-start")), "Add the account to your authenticator app")
	if !evaluate[bool](p, `document.getElementById("enroll-qr").naturalWidth > 0`) {
		t.Fatal("the QR code image did not load")
	}
	secret := strings.ReplaceAll(p.text("enroll-secret"), " ", "")
	otpauth := "otpauth://totp/" + user + "?secret=" + secret
	p.noTokenInPage()
	p.do("type the enrollment code", chromedp.SendKeys(chromedp.ID("enroll-code"), totpCode(t, otpauth, time.Now())))
	p.act("confirm enrollment", chromedp.Click(chromedp.CSS("#enroll-form button[type=submit]")), "Two-factor login is on")
	codes := evaluate[[]string](p, `[...document.querySelectorAll("#recovery-codes li")].map(li => li.textContent)`)
	recoveryCode := regexp.MustCompile(`^[a-z0-9]{4}(-[a-z0-9]{4}){3}$`)
	if len(codes) != 10 || slices.ContainsFunc(codes, func(c string) bool { return !recoveryCode.MatchString(c) }) {
		t.Errorf("the page shows the recovery codes %q, want 10 of the form xxxx-xxxx-xxxx-xxxx", codes)
	}

	p.act("log out", chromedp.Click(chromedp.ID("logout")), "Logged out")
	if n := evaluate[int](p, `document.getElementById("whoami").childElementCount`); n != 0 {
		t.Errorf("after log-out the whoami display still has %d entries", n)
	}
	if evaluate[bool](p, `document.getElementById("recovery-codes").childElementCount > 0`) {
		t.Error("after log-out the page still shows the recovery codes")
	}
	p.noTokenInPage()

	// Log in again: the password, then the code prompt. A wrong code keeps
	// the prompt open; the next step's code, unused so far, passes.
	p.logInUser(user, vars["DEMO_PASSWORD"], "Password accepted")
	p.do("type a wrong code", chromedp.SendKeys(chromedp.ID("login-code"), wrongCode(t, otpauth)))
	p.act("send the wrong code", chromedp.Click(chromedp.CSS("#code-prompt-form button[type=submit]")),
		"Code check failed: invalid TOTP code (HTTP 401)")
	p.do("type the code", chromedp.SendKeys(chromedp.ID("login-code"), nextCode(t, otpauth)))
	p.act("send the code", chromedp.Click(chromedp.CSS("#code-prompt-form button[type=submit]")),
		"Logged in as "+user+" with two-factor login.")
	p.wantPrincipal(map[string]string{"kind": "user", "name": user, "totp": "yes"})
	p.noTokenInPage()

	p.do("fill in the host login",
		chromedp.SendKeys(chromedp.ID("host-id"), host),
		chromedp.SendKeys(chromedp.ID("host-mac"), "02:00:00:00:00:01"),
		chromedp.SendKeys(chromedp.ID("host-password"), vars["DEMO_HOST_PASSWORD"]))
	p.act("host login", chromedp.Click(chromedp.CSS("#host-login-form button[type=submit]")), "Logged in as host "+host+".")
	p.wantPrincipal(map[string]string{"kind": "host", "name": host})
	p.noTokenInPage()

	p.logInUser(user, "not-the-password", "User login failed: invalid credentials (HTTP 401)")
	if !evaluate[bool](p, `document.getElementById("status").classList.contains("error")`) {
		t.Error("the wrong password is not shown as an error")
	}

	// The admin view sees the enrollment, disables the user, whose login
	// then fails, and enables the user again; the same for the host.
	p.act("refresh the admin view", chromedp.Click(chromedp.ID("admin-refresh")), "Admin view refreshed.")
	p.wantAdminRow("users", user, map[string]string{"state": "enabled", "totp": "on", "recoveryCodes": "10"})
	p.act("disable the user", p.adminClick("users", user, "disable"), "User "+user+": user disabled.")
	p.wantAdminRow("users", user, map[string]string{"state": "disabled", "totp": "on"})
	p.logInUser(user, vars["DEMO_PASSWORD"], "User login failed: invalid credentials (HTTP 401)")
	p.act("enable the user", p.adminClick("users", user, "enable"), "User "+user+": user enabled.")
	p.wantAdminRow("users", user, map[string]string{"state": "enabled", "totp": "on"})
	p.act("disable the host", p.adminClick("hosts", host, "disable"), "Host "+host+": host disabled.")
	p.wantAdminRow("hosts", host, map[string]string{"state": "disabled"})
	p.act("enable the host", p.adminClick("hosts", host, "enable"), "Host "+host+": host enabled.")
	p.wantAdminRow("hosts", host, map[string]string{"state": "enabled"})
	p.noSecretInPage(master)
	p.act("close the admin view", chromedp.Click(chromedp.ID("admin-close")), "Admin view closed")
	if n := evaluate[int](p, `document.querySelectorAll("#admin-users tbody tr, #admin-hosts tbody tr").length`); n != 0 {
		p.t.Errorf("after closing, the admin view still shows %d rows", n)
	}

	d.stop()
	p.act("refresh with the server gone", chromedp.Click(chromedp.ID("whoami-refresh")),
		"Refreshing the session failed: the server could not be reached")
	p.checkConsole()
}

// page is the demo page open in a headless Chromium.
type page struct {
	t   *testing.T
	ctx context.Context

	mu      sync.Mutex
	console []chromedp.ConsoleMessage
}

// openPage starts Chromium on the page at url. When the test fails, it
// saves a screenshot to $NMAUTH_TEST_ARTIFACTS, or else to a temporary
// directory, and logs the path.
// viewportWidth is the width of the browser's window, and of a
// screenshot.
const viewportWidth = 1000

func openPage(t *testing.T, url string) *page {
	t.Helper()
	artifacts := os.Getenv("NMAUTH_TEST_ARTIFACTS")
	if artifacts == "" {
		artifacts = t.TempDir()
	}
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox, // the test may run as root, where the sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1000, 800),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc) // waits for the browser to exit, before its user-data-dir goes
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(cancel)
	p := &page{t: t, ctx: ctx}

	// The first action starts the browser, which lives as long as ctx: it
	// must have no timeout of its own.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(viewportWidth, 800)); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	go p.collectConsole()
	t.Cleanup(func() {
		if t.Failed() {
			p.saveFailure(artifacts)
		}
	})
	p.do("open the page", chromedp.Navigate(url), chromedp.WaitVisible(chromedp.ID("user-login-form")))
	return p
}

func (p *page) collectConsole() {
	for m, err := range chromedp.Console(p.ctx) {
		if err != nil {
			return
		}
		p.mu.Lock()
		p.console = append(p.console, m)
		p.mu.Unlock()
	}
}

// checkConsole fails on an exception the page did not catch and on
// anything the Content-Security-Policy blocked. Failed loads are expected:
// the browser reports each 401 answer.
func (p *page) checkConsole() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.console {
		if m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
			p.t.Errorf("browser console: %s", m)
		}
	}
}

// do runs browser actions within one step's time limit.
func (p *page) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserStepLimit)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

func evaluate[T any](p *page, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserStepLimit)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

func (p *page) text(id string) string {
	p.t.Helper()
	return evaluate[string](p, "document.getElementById("+jsString(id)+").textContent")
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// act performs an action and waits until the status line says want, or
// shows another error than before, and fails unless it says want.
func (p *page) act(what string, action chromedp.Action[chromedp.Void], want string) {
	p.t.Helper()
	before := p.text("status")
	p.do(what, action)
	ctx, cancel := context.WithTimeout(p.ctx, browserStepLimit)
	defer cancel()
	expr := fmt.Sprintf(`(() => {
		const s = document.getElementById("status");
		const text = s.textContent;
		return text.includes(%s) || (s.classList.contains("error") && text !== %s) ? text : "";
	})()`, jsString(want), jsString(before))
	got, err := chromedp.Run(ctx, chromedp.Poll[string](expr, chromedp.WithPollingTimeout(0)))
	if err != nil {
		p.t.Fatalf("%s: waiting for %q: %v; the page says %q", what, want, err, p.text("status"))
	}
	if !strings.Contains(got, want) {
		p.t.Fatalf("%s: the page says %q, want %q", what, got, want)
	}
}

func (p *page) logInUser(name, password, want string) {
	p.t.Helper()
	p.do("fill in the user login", chromedp.WaitVisible(chromedp.ID("user-login-form")))
	p.clear("user-name")
	p.clear("user-password")
	p.do("fill in the user login",
		chromedp.SendKeys(chromedp.ID("user-name"), name),
		chromedp.SendKeys(chromedp.ID("user-password"), password))
	p.act("user login", chromedp.Click(chromedp.CSS("#user-login-form button[type=submit]")), want)
}

// clear empties an input, as selecting its text and deleting it would.
// chromedp.Clear resets only the value attribute, which no longer matters
// once something was typed.
func (p *page) clear(id string) {
	p.t.Helper()
	evaluate[string](p, "document.getElementById("+jsString(id)+").value = ''")
}

// wantPrincipal checks the fields of the whoami display, and that it shows
// no field besides them and the token's times.
func (p *page) wantPrincipal(want map[string]string) {
	p.t.Helper()
	got := evaluate[map[string]string](p, `Object.fromEntries(
		[...document.querySelectorAll("#whoami dd")].map(dd => [dd.dataset.field, dd.textContent]))`)
	for field, w := range want {
		if got[field] != w {
			p.t.Errorf("whoami shows %s = %q, want %q (all: %q)", field, got[field], w, got)
		}
	}
	for field := range got {
		if _, ok := want[field]; !ok && field != "issuedAt" && field != "expiresAt" {
			p.t.Errorf("whoami shows an unexpected field %s = %q", field, got[field])
		}
	}
}

// noTokenInPage checks that no token is in the document or in any storage
// that outlives the tab.
func (p *page) noTokenInPage() {
	p.t.Helper()
	if evaluate[bool](p, `document.documentElement.outerHTML.includes("eyJ")`) {
		p.t.Error("the page's document contains a JWT")
	}
	stored := evaluate[[]int](p, `[localStorage.length, sessionStorage.length, document.cookie.length]`)
	if !slices.Equal(stored, []int{0, 0, 0}) {
		p.t.Errorf("the page stored something: localStorage, sessionStorage and cookie lengths %v", stored)
	}
}

// adminRowExpr is a JavaScript expression: the row of the admin table of
// kind ("users" or "hosts") whose name cell is name, or undefined.
func adminRowExpr(kind, name string) string {
	return `[...document.querySelectorAll("#admin-` + kind + ` tbody tr")].find(
		(tr) => tr.querySelector("[data-field=name]").textContent === ` + jsString(name) + `)`
}

// wantAdminRow checks cells of the row of name in the admin table of kind.
func (p *page) wantAdminRow(kind, name string, want map[string]string) {
	p.t.Helper()
	got := evaluate[map[string]string](p, `(() => {
		const tr = `+adminRowExpr(kind, name)+`;
		return tr ? Object.fromEntries([...tr.querySelectorAll("td[data-field]")].map(td => [td.dataset.field, td.textContent])) : {};
	})()`)
	if len(got) == 0 {
		p.t.Fatalf("the admin table of %s has no row %q", kind, name)
	}
	for field, w := range want {
		if got[field] != w {
			p.t.Errorf("admin %s row %q: %s = %q, want %q (all: %q)", kind, name, field, got[field], w, got)
		}
	}
}

// adminClick clicks the button of action in the row of name in the admin
// table of kind, and fails when there is none.
func (p *page) adminClick(kind, name, action string) chromedp.Action[chromedp.Void] {
	expr := `(() => {
		const tr = ` + adminRowExpr(kind, name) + `;
		const b = tr && tr.querySelector("button[data-action=` + action + `]");
		if (!b) return false;
		b.click();
		return true;
	})()`
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		ok, err := chromedp.Evaluate[bool](expr)(ctx, tg)
		if err == nil && !ok {
			err = fmt.Errorf("no %s button in the %s row %q", action, kind, name)
		}
		return chromedp.Void{}, err
	}
}

// noSecretInPage checks that the master key is neither in the document,
// nor left in its input, nor in any storage that outlives the tab.
func (p *page) noSecretInPage(secret string) {
	p.t.Helper()
	if evaluate[bool](p, `document.documentElement.outerHTML.includes(`+jsString(secret)+`)`) {
		p.t.Error("the page's document contains the master key")
	}
	if v := evaluate[string](p, `document.getElementById("admin-key").value`); v != "" {
		p.t.Error("the master key is still in its input")
	}
	p.noTokenInPage()
}

// screenshot saves the page as a PNG at path, and checks that it is one,
// of the page's width.
func (p *page) screenshot(path string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserStepLimit)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("screenshot: %v", err)
	}
	cfg, err := pngpkg.DecodeConfig(bytes.NewReader(png))
	if err != nil || cfg.Width != viewportWidth {
		p.t.Fatalf("the screenshot is not a PNG %d pixels wide: %v, %+v", viewportWidth, err, cfg)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("saved a screenshot of the page to %s", path)
}

// saveFailure keeps what the page showed when the test failed.
func (p *page) saveFailure(dir string) {
	ctx, cancel := context.WithTimeout(p.ctx, browserStepLimit)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Logf("no failure screenshot: %v", err)
		return
	}
	path := filepath.Join(dir, strings.ReplaceAll(p.t.Name(), "/", "_")+"-failure.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Logf("no failure screenshot: %v", err)
		return
	}
	p.t.Logf("screenshot of the failure: %s (set NMAUTH_TEST_ARTIFACTS to keep it after the test)", path)
}
