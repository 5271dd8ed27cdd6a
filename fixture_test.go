package nmauth_test

import (
	"bytes"
	"context"
	"encoding/base32"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/openapitest"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

// testMasterKey is a master key long enough to be accepted without opt-in.
const testMasterKey = "test-master-key-0123456789abcdef-0123"

// clock is a settable time source shared by the Authenticator under test.
// Like a real clock it never reads the same instant twice: each read moves
// it on by a microsecond, so events happen in the order they are made.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock {
	return &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Microsecond)
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// fixture is an Authenticator with a memory store behind a real HTTP server.
type fixture struct {
	t      testing.TB
	clock  *clock
	store  *nmauth.MemoryStore
	auth   *nmauth.Authenticator
	srv    *httptest.Server
	events *eventLog
	// openapi checks every exchange of send against the document.
	openapi *openapitest.Checker
	// wire is the profile the handler answers in.
	wire nmauth.WireProfile
}

type eventLog struct {
	mu     sync.Mutex
	events []nmauth.Event
}

func (l *eventLog) add(_ context.Context, e nmauth.Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *eventLog) count(t nmauth.EventType) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.events {
		if e.Type == t {
			n++
		}
	}
	return n
}

func testSecret(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func newFixture(t testing.TB, tweak ...func(*nmauth.Config)) *fixture {
	t.Helper()
	mk, err := nmauth.NewMasterKey(testMasterKey, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, clock: newClock(), store: nmauth.NewMemoryStore(), events: &eventLog{}}
	cfg := nmauth.Config{
		Store:     f.store,
		Secrets:   [][]byte{testSecret(1)},
		MasterKey: mk,
		Now:       f.clock.Now,
		OnEvent:   f.events.add,
		// Tests send many attempts from one address on a frozen clock;
		// TestClientLimit covers the limit itself.
		ClientRate: -1,
	}
	for _, fn := range tweak {
		fn(&cfg)
	}
	if f.auth, err = nmauth.New(cfg); err != nil {
		t.Fatal(err)
	}
	f.wire = cfg.Wire
	f.openapi = openAPIChecker(t, cfg.Wire)
	f.srv = httptest.NewServer(f.auth.Handler())
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) addUser(name, password string) {
	f.t.Helper()
	if err := f.auth.CreateUser(context.Background(), name, password); err != nil {
		f.t.Fatalf("CreateUser(%q): %v", name, err)
	}
}

func (f *fixture) addHost(id, mac, password string) {
	f.t.Helper()
	if err := f.auth.CreateHost(context.Background(), id, mac, password); err != nil {
		f.t.Fatalf("CreateHost(%q): %v", id, err)
	}
}

// withWire sets the profile the handler answers in.
func withWire(w nmauth.WireProfile) func(*nmauth.Config) {
	return func(c *nmauth.Config) { c.Wire = w }
}

// eachWire runs test once per wire profile, as a subtest named after it.
func eachWire(t *testing.T, test func(t *testing.T, w nmauth.WireProfile)) {
	for _, w := range []nmauth.WireProfile{nmauth.WireSpec, nmauth.WireNetmaker} {
		t.Run(w.String(), func(t *testing.T) { test(t, w) })
	}
}

// testHostIDs are host ids valid in both profiles: Netmaker's are UUIDs.
var testHostIDs = []string{
	"3f2b8c1e-7d4a-4e0b-9c6f-1a2b3c4d5e01",
	"3f2b8c1e-7d4a-4e0b-9c6f-1a2b3c4d5e02",
	"3f2b8c1e-7d4a-4e0b-9c6f-1a2b3c4d5e03",
}

// reply is a decoded HTTP answer, read through the names of its profile.
type reply struct {
	status int
	header http.Header
	body   []byte
	wire   nmauth.WireProfile
}

// netmakerNames are the keys the Netmaker profile writes for the spec's
// names; names not listed are the same in both.
var netmakerNames = map[string]string{
	"code":              "Code",
	"message":           "Message",
	"response":          "Response",
	"authToken":         "AuthToken",
	"userName":          "UserName",
	"preAuthToken":      "pre_auth_token",
	"id":                "ID",
	"recoveryCodesLeft": "RecoveryCodesLeft",
}

// key is the key of the spec's name in the reply's profile.
func (r reply) key(name string) string {
	if n, ok := netmakerNames[name]; ok && r.wire == nmauth.WireNetmaker {
		return n
	}
	return name
}

// envelope returns the code and message of an envelope.
func (r reply) envelope(t testing.TB) (int, string) {
	t.Helper()
	m := r.json(t)
	code, _ := m[r.key("code")].(float64)
	msg, _ := m[r.key("message")].(string)
	return int(code), msg
}

// answer returns the object an answer carries: the envelope's response,
// or the whole body for the spec's bare init-totp and verify-totp answers.
func (r reply) answer(t testing.TB) map[string]any {
	t.Helper()
	if _, enveloped := r.json(t)[r.key("code")]; enveloped {
		return r.response(t)
	}
	return r.json(t)
}

// field returns the answer's field of the spec's name, in either profile.
func (r reply) field(t testing.TB, name string) any {
	t.Helper()
	a := r.answer(t)
	if name == "userName" && r.wire == nmauth.WireNetmaker && a["pre_auth_token"] != nil {
		return a["user_name"] // Netmaker's answer with TOTP on has its own tags
	}
	return a[r.key(name)]
}

func (r reply) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %q is not a JSON object: %v", r.body, err)
	}
	return m
}

// response returns the envelope's response object.
func (r reply) response(t testing.TB) map[string]any {
	t.Helper()
	resp, ok := r.json(t)[r.key("response")].(map[string]any)
	if !ok {
		t.Fatalf("no response object in %s", r.body)
	}
	return resp
}

// do sends a POST with a JSON body (nil for none) and an optional bearer.
func (f *fixture) do(path, bearer string, body any) reply {
	f.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			f.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	return f.send(req)
}

func (f *fixture) send(req *http.Request) reply {
	f.t.Helper()
	sent := recordBody(req, maxRecordedBody)
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, body: b, wire: f.wire}
	checkOpenAPI(f.t, f.openapi, req, sent.Bytes(), r)
	return r
}

func wantStatus(t testing.TB, r reply, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
}

// wantError checks a status and that the body is the profile's envelope
// with the same code and a message, and in the Netmaker profile a null
// Response, as Netmaker's server writes.
func wantError(t testing.TB, r reply, status int) {
	t.Helper()
	wantStatus(t, r, status)
	code, msg := r.envelope(t)
	if code != status || msg == "" {
		t.Fatalf("envelope code %d message %q, want %d and a message; body %s", code, msg, status, r.body)
	}
	if resp, ok := r.json(t)["Response"]; r.wire == nmauth.WireNetmaker && (!ok || resp != nil) {
		t.Fatalf("Netmaker error without \"Response\":null: %s", r.body)
	}
	if status == http.StatusUnauthorized && r.header.Get("WWW-Authenticate") != `Bearer realm="nmauth"` {
		t.Fatalf("401 without WWW-Authenticate: %v", r.header)
	}
}

func (f *fixture) loginUser(name, password string) reply {
	f.t.Helper()
	return f.do("/api/users/adm/authenticate", "", map[string]string{"username": name, "password": password})
}

// userToken logs in a user without TOTP and returns the user token.
func (f *fixture) userToken(name, password string) string {
	f.t.Helper()
	r := f.loginUser(name, password)
	wantStatus(f.t, r, http.StatusOK)
	tok, _ := r.field(f.t, "authToken").(string)
	if tok == "" {
		f.t.Fatalf("no authToken in %s", r.body)
	}
	return tok
}

// preAuthToken logs in a user with TOTP on and returns the pre-auth token.
func (f *fixture) preAuthToken(name, password string) string {
	f.t.Helper()
	r := f.loginUser(name, password)
	wantStatus(f.t, r, http.StatusOK)
	if r.field(f.t, "authToken") != nil || r.field(f.t, "userName") != name {
		f.t.Fatalf("login with TOTP on: %s", r.body)
	}
	if f.wire == nmauth.WireSpec && r.field(f.t, "totpRequired") != true {
		f.t.Fatalf("login with TOTP on lacks totpRequired: %s", r.body)
	}
	tok, _ := r.field(f.t, "preAuthToken").(string)
	if tok == "" {
		f.t.Fatalf("no preAuthToken in %s", r.body)
	}
	return tok
}

// enrollment is what init-totp returned, with the secret read from the URL.
type enrollment struct {
	url, signature, qr, secret string
}

func (f *fixture) initTOTP(name, bearer string) enrollment {
	f.t.Helper()
	r := f.do("/api/users/"+name+"/auth/init-totp", bearer, nil)
	wantStatus(f.t, r, http.StatusOK)
	m := r.answer(f.t)
	e := enrollment{}
	e.url, _ = m["otp_auth_url"].(string)
	e.signature, _ = m["otp_auth_url_signature"].(string)
	e.qr, _ = m["qr_code"].(string)
	u, err := url.Parse(e.url)
	if err != nil {
		f.t.Fatalf("otp_auth_url %q: %v", e.url, err)
	}
	e.secret = u.Query().Get("secret")
	if e.secret == "" || e.signature == "" || !strings.HasPrefix(e.qr, "data:image/png;base64,") {
		f.t.Fatalf("init-totp answer incomplete: %s", r.body)
	}
	return e
}

// code computes a TOTP code from the secret and the fixture's clock with
// an implementation independent of the package under test.
func (f *fixture) code(secret string, offset time.Duration) string {
	f.t.Helper()
	c, err := totp.GenerateCodeCustom(secret, f.clock.Now().Add(offset), totp.ValidateOpts{
		Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// enroll turns TOTP on for a user through the HTTP routes and returns the
// secret and the recovery codes.
func (f *fixture) enroll(name, bearer string) (string, []string) {
	f.t.Helper()
	e := f.initTOTP(name, bearer)
	r := f.do("/api/users/"+name+"/auth/complete-totp", bearer, map[string]string{
		"otp_auth_url": e.url, "otp_auth_url_signature": e.signature, "totp": f.code(e.secret, 0),
	})
	wantStatus(f.t, r, http.StatusOK)
	var codes []string
	for _, c := range r.field(f.t, "recoveryCodes").([]any) {
		codes = append(codes, c.(string))
	}
	// The code just used is spent; later tests start on a fresh step.
	f.clock.Advance(30 * time.Second)
	return e.secret, codes
}

func (f *fixture) verifyTOTP(name, preAuth, code string) reply {
	f.t.Helper()
	return f.do("/api/users/"+name+"/auth/verify-totp", preAuth, map[string]string{"totp": code})
}

func mustBase32(t testing.TB, s string) []byte {
	t.Helper()
	b, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// secretOf reads the secret from an otpauth URL.
func secretOf(t testing.TB, otpURL string) string {
	t.Helper()
	u, err := url.Parse(otpURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("secret")
}
