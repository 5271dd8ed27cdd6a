package nmauth_test

import (
	"bytes"
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/nmauth/nmauth"
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

// fixture is an Authenticator behind a real HTTP server, over a memory
// store unless an option sets another. It counts panics (turned into
// 500s), 5xx answers to sendHostile, and error lines of the
// Authenticator's log and the server's; client never follows redirects.
type fixture struct {
	t      testing.TB
	clock  *clock
	store  nmauth.Store // the Store the Authenticator uses
	auth   *nmauth.Authenticator
	ext    *nmauth.Extension // registered with auth
	srv    *httptest.Server
	client *http.Client
	events *eventLog

	panics, serverErr, errorLogs atomic.Int64
	// openapi records every exchange of send, for the check against the
	// OpenAPI document; nil when not recording, or when the document does
	// not describe the server.
	openapi *exchangeLog
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
	f := &fixture{t: t, clock: newClock(), events: &eventLog{}}
	cfg := nmauth.Config{
		Store:     nmauth.NewMemoryStore(),
		Secrets:   [][]byte{testSecret(1)},
		MasterKey: mk,
		Now:       f.clock.Now,
		OnEvent:   f.events.add,
		// Error records are counted, not printed; an option may log
		// elsewhere.
		Logger: slog.New(&countingHandler{n: &f.errorLogs}),
		// Tests send many attempts from one address on a frozen clock;
		// TestClientLimit covers the limit itself.
		ClientRate: -1,
	}
	for _, fn := range tweak {
		fn(&cfg)
	}
	f.ext = new(nmauth.Extension)
	cfg.Extensions = append(cfg.Extensions, f.ext)
	if f.auth, err = nmauth.New(cfg); err != nil {
		t.Fatal(err)
	}
	f.store = cfg.Store
	f.wire = cfg.Wire
	f.openapi = exchangeLogFor(cfg.Wire)
	f.srv = httptest.NewUnstartedServer(f.guard(f.auth.Handler()))
	f.srv.Config.ErrorLog = log.New(&logCounter{n: &f.errorLogs}, "", 0)
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	c := *f.srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	f.client = &c
	return f
}

func (f *fixture) addUser(name, password string) {
	f.t.Helper()
	if err := f.auth.Admin().CreateUser(context.Background(), name, password); err != nil {
		f.t.Fatalf("CreateUser(%q): %v", name, err)
	}
}

func (f *fixture) addHost(id, mac, password string) {
	f.t.Helper()
	if err := f.auth.Admin().CreateHost(context.Background(), id, mac, password); err != nil {
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
	return f.request(http.MethodPost, path, bearer, body)
}

// request sends method to path with a JSON body (nil for none) and an
// optional bearer.
func (f *fixture) request(method, path, bearer string, body any) reply {
	f.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			f.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
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
	f.openapi.record(f.t, req, sent.Bytes(), r)
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

// The audiences of the four token kinds, as docs/embedding.md documents them.
const (
	audUser    = "nmauth:user"
	audPreAuth = "nmauth:pre-auth"
	audHost    = "nmauth:host"
	audNode    = "nmauth:node"
)

// forger signs tokens as the library does from a root secret: subkeys
// derived with HKDF-SHA256, no salt, one info string per purpose, the key
// id in the kid header. The attack suite uses it to build tokens that are
// wrong in exactly one way. A positive control checks that a well-formed
// forged token is accepted, so that a refusal proves the one defect was
// noticed and not merely that the derivation differs.
type forger struct {
	kid  string
	keys map[string][]byte // by audience
	// gen, when set, gives the generation of the account a token of kind
	// aud for sub must carry.
	gen func(aud, sub string) uint64
}

func newForger(t testing.TB, secret []byte) *forger {
	t.Helper()
	derive := func(info string, n int) []byte {
		k, err := hkdf.Key(sha256.New, secret, nil, info, n)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	fg := &forger{kid: hex.EncodeToString(derive("nmauth key id", 8)), keys: map[string][]byte{}}
	for _, aud := range []string{audUser, audPreAuth, audHost, audNode} {
		fg.keys[aud] = derive("nmauth jwt "+aud, 32)
	}
	return fg
}

// claims returns well-formed claims of the kind aud for sub, issued at now
// and living ttl.
func (fg *forger) claims(aud, sub string, now time.Time, ttl time.Duration) jwt.MapClaims {
	c := jwt.MapClaims{
		"iss": "nmauth",
		"sub": sub,
		"aud": []string{aud},
		"iat": now.Unix(),
		"exp": now.Add(ttl).Unix(),
		"jti": rand.Text(),
	}
	if fg.gen != nil && aud != audNode {
		c["gen"] = fg.gen(aud, sub)
	}
	return c
}

// sign signs c with HS256 under the subkey of aud and the forger's kid.
func (fg *forger) sign(t testing.TB, aud string, c jwt.MapClaims) string {
	t.Helper()
	return signToken(t, jwt.SigningMethodHS256, fg.keys[aud], map[string]any{"kid": fg.kid}, c)
}

// signToken signs c with any method and key, adding header fields; a nil
// header value removes the field.
func signToken(t testing.TB, m jwt.SigningMethod, key any, header map[string]any, c jwt.Claims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, c)
	for k, v := range header {
		if v == nil {
			delete(tok.Header, k)
			continue
		}
		tok.Header[k] = v
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// editSegment decodes one JSON segment of a token (0 the header, 1 the
// payload), lets edit change it, and puts it back, keeping the old
// signature.
func editSegment(t testing.TB, token string, seg int, edit func(map[string]any)) string {
	t.Helper()
	parts := strings.Split(token, ".")
	raw, err := base64.RawURLEncoding.DecodeString(parts[seg])
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if raw, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	parts[seg] = base64.RawURLEncoding.EncodeToString(raw)
	return strings.Join(parts, ".")
}

// watchedStore wraps the fixture's store to learn every host id it is
// asked about, since a Store cannot list its hosts.
type watchedStore struct {
	nmauth.Store
	mu    sync.Mutex
	hosts map[string]bool
}

func (s *watchedStore) saw(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hosts == nil {
		s.hosts = map[string]bool{}
	}
	s.hosts[id] = true
}

func (s *watchedStore) hostIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.hosts))
	for id := range s.hosts {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (s *watchedStore) GetHost(ctx context.Context, id string) (nmauth.Host, error) {
	s.saw(id)
	return s.Store.GetHost(ctx, id)
}

func (s *watchedStore) CreateHost(ctx context.Context, h nmauth.Host) error {
	s.saw(h.ID)
	return s.Store.CreateHost(ctx, h)
}

func (s *watchedStore) UpdateHost(ctx context.Context, id string, fn func(*nmauth.Host) error) error {
	s.saw(id)
	return s.Store.UpdateHost(ctx, id, fn)
}

func (s *watchedStore) DeleteHost(ctx context.Context, id string) error {
	s.saw(id)
	return s.Store.DeleteHost(ctx, id)
}

// storeState is every user and host record at one moment.
type storeState struct {
	Users map[string]nmauth.User
	Hosts map[string]nmauth.Host
}

func (s storeState) clone() storeState {
	c := storeState{Users: map[string]nmauth.User{}, Hosts: map[string]nmauth.Host{}}
	for k, u := range s.Users {
		c.Users[k] = cloneRecord(u)
	}
	for k, h := range s.Hosts {
		c.Hosts[k] = h
	}
	return c
}

func cloneRecord(u nmauth.User) nmauth.User {
	u.TOTPSecret = slices.Clone(u.TOTPSecret)
	u.RecoveryCodes = slices.Clone(u.RecoveryCodes)
	return u
}

// user changes one user record of s in place.
func (s *storeState) user(name string, change func(*nmauth.User)) {
	u := s.Users[name]
	change(&u)
	s.Users[name] = u
}

// host changes one host record of s in place.
func (s *storeState) host(id string, change func(*nmauth.Host)) {
	h := s.Hosts[id]
	change(&h)
	s.Hosts[id] = h
}

func (s *watchedStore) snapshot(t testing.TB) storeState {
	t.Helper()
	ctx := context.Background()
	users, err := s.ListUsers(ctx, "", math.MaxInt32)
	if err != nil {
		t.Fatal(err)
	}
	st := storeState{Users: map[string]nmauth.User{}, Hosts: map[string]nmauth.Host{}}
	for _, u := range users {
		st.Users[u.Name] = u
	}
	for _, id := range s.hostIDs() {
		h, err := s.Store.GetHost(ctx, id)
		switch {
		case err == nil:
			st.Hosts[id] = h
		case !errors.Is(err, nmauth.ErrNotFound):
			t.Fatal(err)
		}
	}
	return st
}

// restore puts every record back as it was in st.
func (s *watchedStore) restore(t testing.TB, st storeState) {
	t.Helper()
	ctx := context.Background()
	cur := s.snapshot(t)
	for name := range cur.Users {
		if _, ok := st.Users[name]; !ok {
			if err := s.DeleteUser(ctx, name); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, want := range st.Users {
		var err error
		if _, ok := cur.Users[name]; ok {
			err = s.UpdateUser(ctx, name, func(u *nmauth.User) error { *u = cloneRecord(want); return nil })
		} else {
			err = s.CreateUser(ctx, cloneRecord(want))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for id := range cur.Hosts {
		if _, ok := st.Hosts[id]; !ok {
			if err := s.DeleteHost(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	for id, want := range st.Hosts {
		var err error
		if _, ok := cur.Hosts[id]; ok {
			err = s.UpdateHost(ctx, id, func(h *nmauth.Host) error { *h = want; return nil })
		} else {
			err = s.CreateHost(ctx, want)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// diffState names every record that differs between want and got.
func diffState(want, got storeState) string {
	var b strings.Builder
	for _, name := range unionKeys(want.Users, got.Users) {
		w, wok := want.Users[name]
		g, gok := got.Users[name]
		if wok != gok || !reflect.DeepEqual(w, g) {
			fmt.Fprintf(&b, "\nuser %q:\n  want %+v (present %v)\n  got  %+v (present %v)", name, w, wok, g, gok)
		}
	}
	for _, id := range unionKeys(want.Hosts, got.Hosts) {
		w, wok := want.Hosts[id]
		g, gok := got.Hosts[id]
		if wok != gok || !reflect.DeepEqual(w, g) {
			fmt.Fprintf(&b, "\nhost %q:\n  want %+v (present %v)\n  got  %+v (present %v)", id, w, wok, g, gok)
		}
	}
	return b.String()
}

func unionKeys[V any](a, b map[string]V) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// guard turns a panic into a counted 500, so that a panic fails the case
// that caused it rather than killing the connection.
func (f *fixture) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				f.panics.Add(1)
				f.t.Logf("panic serving %s %q: %v", r.Method, r.URL.Path, v)
				http.Error(w, "panic", http.StatusInternalServerError)
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// hostileRequest describes one request to send as is.
type hostileRequest struct {
	method string   // POST when empty
	path   string   // appended to the server URL unparsed
	auth   []string // Authorization header values, each sent as given
	ctype  string   // Content-Type; "application/json" when empty, none when noType
	body   string
	// stream, when set, sends body followed by this many bytes of 'a',
	// with no length given.
	stream int64
}

// noType sends a request without a Content-Type header.
const noType = "-"

func bearer(cred string) []string { return []string{"Bearer " + cred} }

func (f *fixture) sendHostile(t testing.TB, hr hostileRequest) reply {
	t.Helper()
	method := hr.method
	if method == "" {
		method = http.MethodPost
	}
	var body io.Reader = strings.NewReader(hr.body)
	if hr.stream > 0 {
		// A reader of unknown length is sent chunked.
		body = io.MultiReader(body, io.LimitReader(endless('a'), hr.stream))
	}
	req, err := http.NewRequest(method, f.srv.URL+hr.path, body)
	if err != nil {
		t.Fatal(err)
	}
	switch hr.ctype {
	case "":
		req.Header.Set("Content-Type", "application/json")
	case noType:
	default:
		req.Header.Set("Content-Type", hr.ctype)
	}
	for _, v := range hr.auth {
		req.Header.Add("Authorization", v)
	}
	sent := recordBody(req, maxRecordedBody)
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v (the server dropped the connection)", method, hr.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode >= 500 {
		f.serverErr.Add(1)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, body: b}
	f.openapi.record(t, req, sent.Bytes(), r)
	return r
}

// endless is an io.Reader of one repeated byte.
type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}

// countingHandler is an slog.Handler that counts records at Error level.
type countingHandler struct{ n *atomic.Int64 }

func (h *countingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (h *countingHandler) Handle(context.Context, slog.Record) error {
	h.n.Add(1)
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

// logCounter counts the lines the HTTP server logs.
type logCounter struct{ n *atomic.Int64 }

func (l *logCounter) Write(p []byte) (int, error) {
	l.n.Add(1)
	return len(p), nil
}
