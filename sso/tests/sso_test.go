package tests_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/sso"
	"github.com/nmauth/nmauth/sso/ssotest"
)

// The provider's users: carol's e-mail is not verified.
var opUsers = []ssotest.User{
	{Subject: "id1", Name: "alice", Password: "op-password-1", Email: "alice@example.com", EmailVerified: true},
	{Subject: "id2", Name: "bob", Password: "op-password-2", Email: "bob@example.org", EmailVerified: true},
	{Subject: "id3", Name: "carol", Password: "op-password-3", Email: "carol@example.com"},
}

var opPasswords = map[string]string{"alice": "op-password-1", "bob": "op-password-2", "carol": "op-password-3"}

// clients numbers the provider's clients: the example storage keeps them
// in one table for the whole process.
var clients atomic.Int64

// world is a real OpenID provider, zitadel/oidc's op package with its
// example storage and login page, and an application that mounts the sso
// routes beside an nmauth Authenticator, both over loopback.
type world struct {
	t      *testing.T
	app    *httptest.Server
	auth   *nmauth.Authenticator
	sso    *sso.SSO
	cfg    sso.Config
	issuer string
}

func newWorld(t *testing.T, tweak func(*sso.Config)) *world {
	t.Helper()
	w := &world{t: t}
	appLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	appURL := "http://" + appLn.Addr().String()
	clientID := fmt.Sprintf("nmauth-%d", clients.Add(1))
	ext := new(nmauth.Extension)
	w.auth, err = nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{[]byte("sso-test-root-secret-0123456789abcdef")}, Extensions: []*nmauth.Extension{ext}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := sso.Config{Extension: ext, Store: sso.NewMemoryStore(), ClientID: clientID,
		ClientSecret: "client-secret", RedirectURL: appURL + "/api/oauth/callback", CompleteURL: "/done"}
	if tweak != nil {
		tweak(&cfg)
	}
	// The provider knows the client as the application is configured:
	// confidential with its secret, or public without one.
	w.issuer = ssotest.Start(t, opUsers, clientID, cfg.ClientSecret, cfg.RedirectURL)
	cfg.Issuer = w.issuer
	w.auth = cfg.Extension.Authenticator()
	if w.sso, err = sso.New(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	w.cfg = cfg
	mux := http.NewServeMux()
	mux.Handle("/api/oauth/", w.sso.Handler())
	mux.HandleFunc("/done", func(http.ResponseWriter, *http.Request) {})
	w.app = httptest.NewUnstartedServer(mux)
	w.app.Listener.Close()
	w.app.Listener = appLn
	w.app.Start()
	t.Cleanup(w.app.Close)
	return w
}

// browser is an HTTP client with cookies that stops at every redirect,
// so that a test sees each hop.
type browser struct {
	t      *testing.T
	client *http.Client
}

func newBrowser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, client: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// get requests u and returns the status, the Location and the body.
func (b *browser) get(u string) (int, string, string) {
	b.t.Helper()
	resp, err := b.client.Get(u)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(body)
}

var authRequestID = regexp.MustCompile(`name="id" value="([^"]+)"`)

// toCallback goes from start through the provider's login page as the
// provider's user name, and returns the provider's redirect to the
// application's callback without following it.
func (b *browser) toCallback(w *world, start, name string) string {
	b.t.Helper()
	next := start
	for range 10 {
		status, loc, body := b.get(next)
		if status == http.StatusOK {
			m := authRequestID.FindStringSubmatch(body)
			if m == nil {
				b.t.Fatalf("no login form at %s: %.300s", next, body)
			}
			resp, err := b.client.PostForm(w.issuer+"/login/username", url.Values{"id": {m[1]}, "username": {name}, "password": {opPasswords[name]}})
			if err != nil {
				b.t.Fatal(err)
			}
			resp.Body.Close()
			loc = resp.Header.Get("Location")
		} else if status != http.StatusFound && status != http.StatusSeeOther {
			b.t.Fatalf("%s answered %d: %.300s", next, status, body)
		}
		u, err := url.Parse(next)
		if err != nil {
			b.t.Fatal(err)
		}
		ref, _ := u.Parse(loc)
		if strings.HasPrefix(ref.String(), w.app.URL+"/api/oauth/callback") {
			return ref.String()
		}
		next = ref.String()
	}
	b.t.Fatal("no callback after 10 hops")
	return ""
}

// login runs the whole browser flow as name and returns the callback's
// answer: its status, and the fragment of the page it sends the browser
// to.
func (b *browser) login(w *world, name string) (int, url.Values) {
	b.t.Helper()
	return b.callback(b.toCallback(w, w.app.URL+"/api/oauth/login", name))
}

func (b *browser) callback(u string) (int, url.Values) {
	b.t.Helper()
	status, loc, _ := b.get(u)
	if status != http.StatusFound {
		return status, nil
	}
	ref, err := url.Parse(loc)
	if err != nil || ref.Path != "/done" {
		b.t.Fatalf("callback sent the browser to %q", loc)
	}
	v, _ := url.ParseQuery(ref.Fragment)
	return status, v
}

func (w *world) link(subject, user string) {
	w.t.Helper()
	if err := w.auth.Admin().CreateUser(context.Background(), user, "nmauth-password-1"); err != nil && !errors.Is(err, nmauth.ErrExists) {
		w.t.Fatal(err)
	}
	if err := w.sso.Link(context.Background(), w.issuer, subject, user); err != nil {
		w.t.Fatal(err)
	}
}

// TestBrowserLogin: a linked identity logs in as its user, with a token
// the Authenticator accepts as that user's; the state and the code are
// good for one callback only, and a callback in another browser than the
// one that started the login is refused.
func TestBrowserLogin(t *testing.T) {
	w := newWorld(t, nil)
	w.link("id1", "alice")
	b := newBrowser(t)
	cb := b.toCallback(w, w.app.URL+"/api/oauth/login", "alice")
	status, v := b.callback(cb)
	if status != http.StatusFound || v.Get("userName") != "alice" {
		t.Fatalf("callback: %d %v", status, v)
	}
	p, err := w.auth.CheckBearer(context.Background(), v.Get("authToken"))
	if err != nil || p.Kind != nmauth.KindUser || p.Name != "alice" {
		t.Fatalf("the SSO token checks as %+v, %v", p, err)
	}

	if status, _ := b.callback(cb); status != http.StatusBadRequest {
		t.Errorf("the same callback again: %d, want 400", status)
	}
	// The used code with the state of a new login.
	fresh := b.toCallback(w, w.app.URL+"/api/oauth/login", "alice")
	old, _ := url.Parse(cb)
	u, _ := url.Parse(fresh)
	q := u.Query()
	q.Set("code", old.Query().Get("code"))
	u.RawQuery = q.Encode()
	if status, v := b.callback(u.String()); status != http.StatusBadRequest || v != nil {
		t.Errorf("a used code: %d %v, want 400 and no token", status, v)
	}
	// A state never issued.
	u, _ = url.Parse(b.toCallback(w, w.app.URL+"/api/oauth/login", "alice"))
	q = u.Query()
	q.Set("state", "made-up")
	u.RawQuery = q.Encode()
	if status, _ := b.callback(u.String()); status != http.StatusBadRequest {
		t.Errorf("a made-up state: %d, want 400", status)
	}
	// Another browser brings the provider's answer.
	cb = b.toCallback(w, w.app.URL+"/api/oauth/login", "alice")
	if status, v := newBrowser(t).callback(cb); status != http.StatusBadRequest || v != nil {
		t.Errorf("the callback in another browser: %d %v, want 400", status, v)
	}
}

// TestRefusals: each option refuses an identity with a 403, no token,
// and no user made.
func TestRefusals(t *testing.T) {
	for _, c := range []struct {
		name, who string
		tweak     func(*sso.Config)
		setup     func(w *world)
	}{
		{"no link", "bob", nil, nil},
		{"a domain not allowed", "bob", func(c *sso.Config) { c.AllowedDomains = []string{"example.com"}; c.CreateUsers = true }, nil},
		{"an unverified e-mail", "carol", func(c *sso.Config) { c.AllowedDomains = []string{"example.com"}; c.CreateUsers = true }, nil},
		{"a group missing", "alice", func(c *sso.Config) { c.RequiredGroup = "admins" }, func(w *world) { w.link("id1", "alice") }},
		{"a disabled user", "alice", nil, func(w *world) {
			w.link("id1", "alice")
			if err := w.auth.Admin().DisableUser(context.Background(), "alice"); err != nil {
				t.Fatal(err)
			}
		}},
		{"a taken name", "bob", func(c *sso.Config) { c.CreateUsers = true }, func(w *world) {
			if err := w.auth.Admin().CreateUser(context.Background(), "bob", "someone-elses-password"); err != nil {
				t.Fatal(err)
			}
		}},
		{"the hook", "alice", func(c *sso.Config) {
			c.OnLogin = func(context.Context, sso.Identity) error { return errors.New("not today") }
		}, func(w *world) { w.link("id1", "alice") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, c.tweak)
			if c.setup != nil {
				c.setup(w)
			}
			before, _ := w.auth.Admin().ListUsers(context.Background(), "", 100)
			status, v := newBrowser(t).login(w, c.who)
			if status != http.StatusForbidden || v != nil {
				t.Fatalf("status %d, fragment %v; want 403 and no login", status, v)
			}
			if after, _ := w.auth.Admin().ListUsers(context.Background(), "", 100); len(after) != len(before) {
				t.Fatalf("users went from %d to %d", len(before), len(after))
			}
		})
	}
}

// TestCreateUsersAndHook: with CreateUsers, a first login makes the user,
// named by preferred_username, and links it, so that the next login is
// the same user; the hook sees the identity's claims.
func TestCreateUsersAndHook(t *testing.T) {
	var seen sso.Identity
	w := newWorld(t, func(c *sso.Config) {
		c.CreateUsers = true
		c.AllowedDomains = []string{"example.org"}
		c.OnLogin = func(_ context.Context, id sso.Identity) error { seen = id; return nil }
	})
	for range 2 {
		status, v := newBrowser(t).login(w, "bob")
		if status != http.StatusFound || v.Get("userName") != "bob" || v.Get("authToken") == "" {
			t.Fatalf("login: %d %v", status, v)
		}
	}
	if seen.Subject != "id2" || seen.Email != "bob@example.org" || !seen.EmailVerified || seen.UserName != "bob" || seen.Claims["preferred_username"] != "bob" {
		t.Fatalf("the hook saw %+v", seen)
	}
	if users, _ := w.auth.Admin().ListUsers(context.Background(), "", 100); len(users) != 1 {
		t.Fatalf("%d users, want the one made", len(users))
	}
}

// TestSecondFactorStillAsked: a user with TOTP on gets a pre-auth token
// from SSO, redeemed with a code computed from the secret; the provider's
// login stands for the password only.
func TestSecondFactorStillAsked(t *testing.T) {
	w := newWorld(t, nil)
	w.link("id1", "alice")
	ctx := context.Background()
	master := nmauth.Principal{Kind: nmauth.KindMaster}
	e, err := w.auth.InitTOTP(ctx, master, "alice")
	if err != nil {
		t.Fatal(err)
	}
	secret := mustSecret(t, e.URL)
	if _, err := w.auth.CompleteTOTP(ctx, master, "alice", e.URL, e.Signature, code(t, secret, time.Now()), ""); err != nil {
		t.Fatal(err)
	}
	status, v := newBrowser(t).login(w, "alice")
	if status != http.StatusFound || v.Get("authToken") != "" || v.Get("preAuthToken") == "" {
		t.Fatalf("SSO with TOTP on: %d %v, want a pre-auth token only", status, v)
	}
	login, err := w.auth.VerifyTOTP(ctx, v.Get("preAuthToken"), "alice", code(t, secret, time.Now().Add(30*time.Second)))
	if err != nil || login.AuthToken == "" {
		t.Fatalf("verify-totp: %v", err)
	}
}

// replica serves the same routes as w's application, over the same
// Store, as another replica would; it returns its URL.
func (w *world) replica(tweak func(*sso.Config)) string {
	cfg := w.cfg
	if tweak != nil {
		tweak(&cfg)
	}
	s, err := sso.New(context.Background(), cfg)
	if err != nil {
		w.t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	w.t.Cleanup(srv.Close)
	return srv.URL
}

// headlessStart opens a headless login's websocket at base and returns it
// with the provider's URL and the code of its first message.
func headlessStart(ctx context.Context, t *testing.T, w *world, base string) (*websocket.Conn, string, string) {
	t.Helper()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/api/oauth/headless", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	_, first, err := conn.Read(ctx)
	m := firstMessage.FindStringSubmatch(string(first))
	if err != nil || m == nil || !strings.HasPrefix(m[1], w.issuer) {
		t.Fatalf("first message %q, %v; want the provider's URL and the code", first, err)
	}
	return conn, m[1], m[2]
}

// firstMessage is the first message of a headless login: the URL to
// visit on its own line, then the code to confirm there.
var firstMessage = regexp.MustCompile(`^(\S+)\n and confirm there the code ([B-Z]{4}-[B-Z]{4})$`)

var (
	pageCode  = regexp.MustCompile(`<p id="code"[^>]*>([^<]+)</p>`)
	pageToken = regexp.MustCompile(`name="token" value="([^"]+)"`)
)

// confirmPage goes through the provider's login page from start as name
// and returns the code and the form's token of the page the callback
// answers.
func (b *browser) confirmPage(w *world, start, name string) (code, token string) {
	b.t.Helper()
	status, _, body := b.get(b.toCallback(w, start, name))
	c, tok := pageCode.FindStringSubmatch(body), pageToken.FindStringSubmatch(body)
	if status != http.StatusOK || c == nil || tok == nil {
		b.t.Fatalf("the callback of a headless login: %d %.500s; want the confirmation page", status, body)
	}
	return c[1], tok[1]
}

// answer posts the confirmation page's form to base.
func (b *browser) answer(base, token, answer string) (int, string) {
	b.t.Helper()
	resp, err := b.client.PostForm(base+"/api/oauth/confirm", url.Values{"token": {token}, "answer": {answer}})
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestHeadless: nmctl's protocol over the websocket: the URL to visit and
// the login's code; the callback shows the same code and asks to
// confirm; once confirmed, "JWT: <token>", then a normal close. The
// websocket is on one replica, and the provider's callback reaches
// another: the login goes through the Store. A confirmation from another
// browser, or a form without its token, changes nothing.
func TestHeadless(t *testing.T) {
	w := newWorld(t, nil)
	w.link("id1", "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	other := w.replica(nil)
	conn, visit, code := headlessStart(ctx, t, w, other)
	b := newBrowser(t)
	shown, token := b.confirmPage(w, visit, "alice")
	if shown != code {
		t.Fatalf("the page shows the code %q, the terminal %q", shown, code)
	}
	if status, body := newBrowser(t).answer(w.app.URL, token, "confirm"); status != http.StatusBadRequest {
		t.Fatalf("a confirmation from another browser: %d %s, want 400", status, body)
	}
	if status, _ := b.answer(w.app.URL, "", "confirm"); status != http.StatusBadRequest {
		t.Fatalf("a confirmation without its token: %d, want 400", status)
	}
	if status, body := b.answer(other, token, "confirm"); status != http.StatusOK || !strings.Contains(body, "return to the terminal") {
		t.Fatalf("the confirmation: %d %s", status, body)
	}
	if status, _ := b.answer(w.app.URL, token, "confirm"); status != http.StatusBadRequest {
		t.Fatalf("the same confirmation again: %d, want 400", status)
	}
	_, msg, err := conn.Read(ctx)
	tok, ok := strings.CutPrefix(string(msg), "JWT: ")
	if err != nil || !ok {
		t.Fatalf("second message %q, %v", msg, err)
	}
	if p, err := w.auth.CheckBearer(ctx, tok); err != nil || p.Name != "alice" {
		t.Fatalf("the headless token: %+v, %v", p, err)
	}
	if _, _, err := conn.Read(ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("after the token: %v, want a normal close", err)
	}
}

// TestHeadlessUnconfirmed: a headless login whose person at the browser
// refuses gets a message saying so, and one nobody confirms ends at its
// PendingTTL with a normal close; neither gets a token.
func TestHeadlessUnconfirmed(t *testing.T) {
	w := newWorld(t, func(c *sso.Config) { c.PendingTTL = 5 * time.Second })
	w.link("id1", "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	conn, visit, _ := headlessStart(ctx, t, w, w.app.URL)
	b := newBrowser(t)
	_, token := b.confirmPage(w, visit, "alice")
	if status, body := b.answer(w.app.URL, token, "refuse"); status != http.StatusOK || !strings.Contains(body, "Refused") {
		t.Fatalf("the refusal: %d %s", status, body)
	}
	_, msg, err := conn.Read(ctx)
	if err != nil || strings.HasPrefix(string(msg), "JWT: ") || !strings.Contains(string(msg), "refused") {
		t.Fatalf("after a refusal: %q, %v; want a message saying so", msg, err)
	}

	conn, visit, _ = headlessStart(ctx, t, w, w.app.URL)
	newBrowser(t).confirmPage(w, visit, "alice")
	if _, msg, err := conn.Read(ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("a login nobody confirmed: message %q, %v; want a normal close and nothing else", msg, err)
	}
}

func mustSecret(t *testing.T, otpURL string) string {
	u, err := url.Parse(otpURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("secret")
}

// code computes a TOTP code with pquerna/otp, not with nmauth.
func code(t *testing.T, secret string, at time.Time) string {
	c, err := totp.GenerateCodeCustom(secret, at, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHeadlessRefusals: a user with a second factor gets a message saying
// why, not a token; past its share of MaxHeadless waiting logins, a client
// group gets 429.
func TestHeadlessRefusals(t *testing.T) {
	w := newWorld(t, func(c *sso.Config) { c.MaxHeadless = 1 })
	w.link("id1", "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	master := nmauth.Principal{Kind: nmauth.KindMaster}
	e, err := w.auth.InitTOTP(ctx, master, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.auth.CompleteTOTP(ctx, master, "alice", e.URL, e.Signature, code(t, mustSecret(t, e.URL), time.Now()), ""); err != nil {
		t.Fatal(err)
	}
	ws := "ws" + strings.TrimPrefix(w.app.URL, "http") + "/api/oauth/headless"
	conn, first, _ := headlessStart(ctx, t, w, w.app.URL)
	if _, resp, err := websocket.Dial(ctx, ws, nil); err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a second headless login past MaxHeadless: %v, want 429", err)
	}
	b := newBrowser(t)
	if status, _, _ := b.get(b.toCallback(w, first, "alice")); status != http.StatusForbidden {
		t.Fatalf("the callback of a headless login of a TOTP user: %d, want 403", status)
	}
	_, msg, err := conn.Read(ctx)
	if err != nil || strings.HasPrefix(string(msg), "JWT: ") || !strings.Contains(string(msg), "second factor") {
		t.Fatalf("message %q, %v; want a refusal naming the second factor", msg, err)
	}
}

// TestFindUser: an identity linked to none logs in as the user FindUser
// names, each time, and stores no link; one FindUser names none of gets
// a 403 and no token, even with CreateUsers; an error of FindUser is the
// server's (503).
func TestFindUser(t *testing.T) {
	var asked []string
	w := newWorld(t, func(c *sso.Config) {
		c.CreateUsers = true
		c.FindUser = func(_ context.Context, id sso.Identity) (string, error) {
			asked = append(asked, id.Subject)
			switch id.Email {
			case "alice@example.com":
				return "alice", nil
			case "bob@example.org":
				return "", nil
			}
			return "", errors.New("the application's accounts did not answer")
		}
	})
	if err := w.auth.Admin().CreateUser(context.Background(), "alice", "alices-password-1"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		status, v := newBrowser(t).login(w, "alice")
		if status != http.StatusFound || v.Get("userName") != "alice" || v.Get("authToken") == "" {
			t.Fatalf("alice, whom FindUser names: %d %v", status, v)
		}
	}
	if len(asked) != 2 {
		t.Errorf("FindUser asked %d times for two logins, want 2: a link was stored", len(asked))
	}
	// bob, whom FindUser does not name, is made by CreateUsers.
	if status, v := newBrowser(t).login(w, "bob"); status != http.StatusFound || v.Get("userName") != "bob" {
		t.Errorf("bob, whom FindUser names not, with CreateUsers: %d %v", status, v)
	}
	if status, v := newBrowser(t).login(w, "carol"); status != http.StatusServiceUnavailable || v != nil {
		t.Errorf("carol, when FindUser fails: %d %v, want 503 and no login", status, v)
	}
}
