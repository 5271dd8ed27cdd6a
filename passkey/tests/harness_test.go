package tests_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
	_ "modernc.org/sqlite"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/openapitest"
	"github.com/nmauth/nmauth/passkey"
)

// The relying party of the tests, and the origin of its page.
const (
	testRPID       = "example.com"
	testOrigin     = "https://auth.example.com"
	testMasterKey  = "test-master-key-0123456789abcdef-0123"
	testPassword   = "correct horse battery"
	evilOrigin     = "https://auth.example.com.evil.test"
	evilRPID       = "evil.test"
	challengeTTL   = 2 * time.Minute // shorter than a pre-auth token's 5
	presenceWindow = 10 * time.Minute
)

// clock is a settable time source shared by the Authenticator and the
// Manager under test; each read moves it on by a microsecond.
type clock struct {
	mu  sync.Mutex
	now time.Time
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

type eventLog struct {
	mu     sync.Mutex
	events []nmauth.Event
}

func (l *eventLog) add(_ context.Context, e nmauth.Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *eventLog) count(typ nmauth.EventType) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// backend is a passkey Store to run the tests over: fresh returns a
// Store over a database of the test's own, and again (called once more)
// a second Store over the same database, as another replica has.
type backend struct {
	name  string
	fresh func(t *testing.T) (first, again func(t *testing.T) passkey.Store)
}

var backends = []backend{
	{"memory", func(t *testing.T) (func(*testing.T) passkey.Store, func(*testing.T) passkey.Store) {
		s := passkey.NewMemoryStore()
		one := func(*testing.T) passkey.Store { return s }
		return one, one
	}},
	{"sqlite", func(t *testing.T) (func(*testing.T) passkey.Store, func(*testing.T) passkey.Store) {
		path := filepath.Join(t.TempDir(), "passkeys.db")
		open := func(t *testing.T) passkey.Store {
			db, err := sql.Open("sqlite", nmauth.SQLiteDSN(path))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return sqlStore(t, db, nmauth.DialectSQLite)
		}
		return open, open
	}},
	{"postgres", func(t *testing.T) (func(*testing.T) passkey.Store, func(*testing.T) passkey.Store) {
		open := postgresDatabase(t)
		store := func(t *testing.T) passkey.Store { return sqlStore(t, open(t), nmauth.DialectPostgres) }
		return store, store
	}},
}

func sqlStore(t *testing.T, db *sql.DB, d nmauth.Dialect) *passkey.SQLStore {
	t.Helper()
	s, err := passkey.NewSQLStore(context.Background(), db, d)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// eachBackend runs test once per backend, as a subtest named after it.
func eachBackend(t *testing.T, test func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { test(t, b) })
	}
}

// postgresDatabase gives the test a schema of its own on the server that
// NMAUTH_TEST_POSTGRES names, dropped when the test ends, and returns a
// function that opens a handle on it. Without the variable the test skips,
// except in CI, where a silent skip would hide that it never ran.
func postgresDatabase(t *testing.T) func(*testing.T) *sql.DB {
	t.Helper()
	dsn := os.Getenv("NMAUTH_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("NMAUTH_TEST_POSTGRES is not set in CI")
		}
		t.Skip("PostgreSQL tests need a server: export NMAUTH_TEST_POSTGRES=\"$(bash .ci/postgres)\" and run again")
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("NMAUTH_TEST_POSTGRES: %v", err)
	}
	admin := stdlib.OpenDB(*cfg)
	schema := "passkey_test_" + strings.ToLower(rand.Text())
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		admin.Close()
		t.Fatalf("creating schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
		admin.Close()
	})
	return func(t *testing.T) *sql.DB {
		c := cfg.Copy()
		c.RuntimeParams["search_path"] = schema
		db := stdlib.OpenDB(*c)
		db.SetMaxOpenConns(10)
		t.Cleanup(func() { db.Close() })
		return db
	}
}

// harness is an Authenticator and its passkey Manager behind a real HTTP
// server.
type harness struct {
	t      testing.TB
	clock  *clock
	users  nmauth.Store
	store  passkey.Store
	auth   *nmauth.Authenticator
	ext    *nmauth.Extension // registered with auth, given to pk
	pk     *passkey.Manager
	srv    *httptest.Server
	events *eventLog
	wire   nmauth.WireProfile
}

// options of a harness.
type options struct {
	wire         nmauth.WireProfile
	passwordless bool
	store        passkey.Store
	users        nmauth.Store
	clock        *clock
	// clientLimit keeps the Authenticator's per-client limit at its
	// default, which the other tests turn off; maxChallenges is
	// Config.MaxChallenges.
	clientLimit   bool
	maxChallenges int
}

func newHarness(t testing.TB, o options) *harness {
	t.Helper()
	if o.store == nil {
		o.store = passkey.NewMemoryStore()
	}
	if o.users == nil {
		o.users = nmauth.NewMemoryStore()
	}
	if o.clock == nil {
		o.clock = &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	}
	mk, err := nmauth.NewMasterKey(testMasterKey, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, clock: o.clock, users: o.users, store: o.store, events: &eventLog{}, wire: o.wire}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	rate := -1.0 // tests make many attempts from one address
	if o.clientLimit {
		rate = 0
	}
	h.ext = new(nmauth.Extension)
	h.auth, err = nmauth.New(nmauth.Config{
		Extensions:   []*nmauth.Extension{h.ext},
		Store:        o.users,
		Secrets:      [][]byte{bytes.Repeat([]byte{7}, 32)},
		MasterKey:    mk,
		Wire:         o.wire,
		SecondFactor: passkey.SecondFactor(o.store),
		OnEvent:      h.events.add,
		Now:          o.clock.Now,
		Logger:       quiet,
		ClientRate:   rate,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.pk, err = passkey.New(passkey.Config{
		Extension:     h.ext,
		Store:         o.store,
		RPID:          testRPID,
		RPName:        "nmauth tests",
		Origins:       []string{testOrigin},
		Passwordless:  o.passwordless,
		ChallengeTTL:  challengeTTL,
		MaxChallenges: o.maxChallenges,
		Now:           o.clock.Now,
		Logger:        quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.srv = httptest.NewServer(h.pk.Handler())
	t.Cleanup(h.srv.Close)
	return h
}

func (h *harness) addUser(name string) {
	h.t.Helper()
	if err := h.auth.Admin().CreateUser(context.Background(), name, testPassword); err != nil {
		h.t.Fatal(err)
	}
}

// reply is an HTTP answer, read through the names of its wire profile.
type reply struct {
	status int
	header http.Header
	body   []byte
	wire   nmauth.WireProfile
}

// key is the name of an envelope's field in the reply's profile.
func (r reply) key(name string) string {
	if r.wire == nmauth.WireNetmaker {
		return strings.ToUpper(name[:1]) + name[1:]
	}
	return name
}

func (r reply) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %q is not a JSON object: %v", r.body, err)
	}
	return m
}

// response is the envelope's payload.
func (r reply) response(t testing.TB) map[string]any {
	t.Helper()
	resp, ok := r.json(t)[r.key("response")].(map[string]any)
	if !ok {
		t.Fatalf("no response object in %s", r.body)
	}
	return resp
}

// token is the user token of a login's answer, in either profile.
func (r reply) token(t testing.TB) string {
	t.Helper()
	tok, _ := r.response(t)[r.key("authToken")].(string)
	if tok == "" {
		t.Fatalf("no user token in %s", r.body)
	}
	return tok
}

func (h *harness) send(method, path, bearer string, body []byte) reply {
	h.t.Helper()
	req, err := http.NewRequest(method, h.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, body: b, wire: h.wire}
	h.checkOpenAPI(req, body, r)
	return r
}

// checkOpenAPI fails the test when an exchange departs from the OpenAPI
// document of the harness's wire profile.
func (h *harness) checkOpenAPI(req *http.Request, body []byte, r reply) {
	h.t.Helper()
	c, err := openapitest.ForProfile(h.wire)
	if err != nil {
		h.t.Fatal(err)
	}
	err = c.Check(openapitest.Exchange{Request: req, RequestBody: body, Status: r.status, Header: r.header, Body: r.body})
	if err != nil {
		h.t.Errorf("the exchange departs from the OpenAPI document: %v", err)
	}
}

func (h *harness) post(path, bearer string, body any) reply {
	h.t.Helper()
	var b []byte
	switch v := body.(type) {
	case nil:
	case []byte:
		b = v
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			h.t.Fatal(err)
		}
	}
	return h.send(http.MethodPost, path, bearer, b)
}

func wantStatus(t testing.TB, r reply, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
}

// wantError checks a status, the profile's error envelope with that code
// and a message, and WWW-Authenticate on a 401.
func wantError(t testing.TB, r reply, status int) {
	t.Helper()
	wantStatus(t, r, status)
	m := r.json(t)
	code, _ := m[r.key("code")].(float64)
	msg, _ := m[r.key("message")].(string)
	if int(code) != status || msg == "" {
		t.Fatalf("envelope code %v message %q, want %d and a message; body %s", m[r.key("code")], msg, status, r.body)
	}
	if status == http.StatusUnauthorized && r.header.Get("WWW-Authenticate") != `Bearer realm="nmauth"` {
		t.Fatalf("401 without WWW-Authenticate: %v", r.header)
	}
}

// passwordLogin logs a user in with the password and returns the token it
// got, and whether it is a pre-auth token.
func (h *harness) passwordLogin(name string) (token string, preAuth bool) {
	h.t.Helper()
	r := h.post("/api/users/adm/authenticate", "", map[string]string{"username": name, "password": testPassword})
	wantStatus(h.t, r, http.StatusOK)
	resp := r.response(h.t)
	if tok, ok := resp[r.key("authToken")].(string); ok && tok != "" {
		return tok, false
	}
	for _, k := range []string{"preAuthToken", "pre_auth_token"} {
		if tok, ok := resp[k].(string); ok && tok != "" {
			return tok, true
		}
	}
	h.t.Fatalf("no token in %s", r.body)
	return "", false
}

// userToken logs a user without a second factor in and returns the token.
// plainUserToken is a user token that passed no second factor, for the
// user named name even when the user has a passkey: an application's own
// Authenticator over the same users and root secret, which does not ask
// about passkeys, mints it.
func (h *harness) plainUserToken(name string) string {
	h.t.Helper()
	ext := new(nmauth.Extension)
	if _, err := nmauth.New(nmauth.Config{
		Extensions: []*nmauth.Extension{ext},
		Store:      h.users,
		Secrets:    [][]byte{bytes.Repeat([]byte{7}, 32)},
		Now:        h.clock.Now,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	}); err != nil {
		h.t.Fatal(err)
	}
	tok, err := ext.Login(context.Background(), name)
	if err != nil || tok.AuthToken == "" {
		h.t.Fatalf("a plain user token for %s: %+v, %v", name, tok, err)
	}
	return tok.AuthToken
}

func (h *harness) userToken(name string) string {
	h.t.Helper()
	tok, pre := h.passwordLogin(name)
	if pre {
		h.t.Fatalf("%s has a second factor", name)
	}
	return tok
}

// options is the publicKey object of a begin's answer.
func optionsOf(t testing.TB, r reply) map[string]any {
	t.Helper()
	pk, ok := r.response(t)["publicKey"].(map[string]any)
	if !ok {
		t.Fatalf("no publicKey options in %s", r.body)
	}
	return pk
}

// beginRegistration starts a registration and returns a ceremony as a
// browser on the test origin would make it from the options.
func (h *harness) beginRegistration(user, bearer, name string) (ceremony, map[string]any) {
	h.t.Helper()
	r := h.post("/api/users/"+user+"/passkeys/register/begin", bearer, map[string]string{"name": name})
	wantStatus(h.t, r, http.StatusOK)
	opts := optionsOf(h.t, r)
	rp, _ := opts["rp"].(map[string]any)
	return ceremony{
		typ: "webauthn.create", challenge: opts["challenge"].(string), origin: testOrigin,
		rpID: rp["id"].(string), flags: flagUP | flagUV | flagAT,
	}, opts
}

// register registers k for user with the user's token, and returns the
// answer's payload.
func (h *harness) register(user, bearer, name string, k *softKey) map[string]any {
	h.t.Helper()
	c, opts := h.beginRegistration(user, bearer, name)
	u, _ := opts["user"].(map[string]any)
	handle, err := base64.RawURLEncoding.DecodeString(u["id"].(string))
	if err != nil {
		h.t.Fatalf("user.id %v: %v", u["id"], err)
	}
	k.handle = handle
	r := h.post("/api/users/"+user+"/passkeys/register/finish", bearer, k.create(h.t, c))
	wantStatus(h.t, r, http.StatusOK)
	return r.response(h.t)
}

// assertion returns the ceremony of a right answer to request options
// with the next sign count of k.
func assertion(opts map[string]any, k *softKey) ceremony {
	k.count++
	return ceremony{
		typ: "webauthn.get", challenge: opts["challenge"].(string), origin: testOrigin,
		rpID: opts["rpId"].(string), flags: flagUP | flagUV, count: k.count, userHandle: k.handle,
	}
}

// beginSecondFactor starts the passkey second factor with a pre-auth token.
func (h *harness) beginSecondFactor(user, pre string) map[string]any {
	h.t.Helper()
	r := h.post("/api/users/"+user+"/auth/passkey/begin", pre, nil)
	wantStatus(h.t, r, http.StatusOK)
	return optionsOf(h.t, r)
}

func (h *harness) finishSecondFactor(user, pre string, answer []byte) reply {
	h.t.Helper()
	return h.post("/api/users/"+user+"/auth/passkey/finish", pre, answer)
}

func (h *harness) beginPasswordless() map[string]any {
	h.t.Helper()
	r := h.post("/api/users/adm/passkey/begin", "", nil)
	wantStatus(h.t, r, http.StatusOK)
	return optionsOf(h.t, r)
}

func (h *harness) finishPasswordless(answer []byte) reply {
	h.t.Helper()
	return h.post("/api/users/adm/passkey/finish", "", answer)
}

// principal checks a bearer token and returns its principal.
func (h *harness) principal(token string) (nmauth.Principal, error) {
	return h.auth.CheckBearer(context.Background(), token)
}

// record returns the stored record of user, empty for none.
func (h *harness) record(user string) passkey.Record {
	h.t.Helper()
	r, err := h.store.GetRecord(context.Background(), user)
	if err != nil && err != nmauth.ErrNotFound {
		h.t.Fatal(err)
	}
	return r
}

// totpNow computes the code of an otpauth URL at now, with pquerna/otp
// rather than the package under test.
func totpNow(t testing.TB, otpURL string, now time.Time) string {
	t.Helper()
	key, err := otp.NewKeyFromURL(otpURL)
	if err != nil {
		t.Fatal(err)
	}
	code, err := totp.GenerateCodeCustom(key.Secret(), now, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	return code
}
