package nmauth_test

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
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
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/nmauth/nmauth"
)

// The audiences of the four token kinds, as the README documents them.
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

// attackFixture is a fixture whose server counts panics and 5xx answers,
// whose client never follows redirects, and whose store can be
// snapshotted and restored between hostile requests.
type attackFixture struct {
	*fixture
	store     *watchedStore
	client    *http.Client
	panics    atomic.Int64
	serverErr atomic.Int64
	errorLogs atomic.Int64
}

func newAttackFixture(t *testing.T) *attackFixture {
	t.Helper()
	af := &attackFixture{}
	logs := slog.New(&countingHandler{n: &af.errorLogs})
	af.fixture = newFixture(t, func(c *nmauth.Config) {
		af.store = &watchedStore{Store: c.Store}
		c.Store = af.store
		c.Logger = logs
	})
	srv := httptest.NewUnstartedServer(af.guard(af.auth.Handler()))
	srv.Config.ErrorLog = log.New(&logCounter{n: &af.errorLogs}, "", 0)
	srv.Start()
	t.Cleanup(srv.Close)
	af.srv = srv
	c := *srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	af.client = &c
	return af
}

// guard turns a panic into a counted 500, so that a panic fails the case
// that caused it rather than killing the connection.
func (af *attackFixture) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				af.panics.Add(1)
				af.t.Logf("panic serving %s %q: %v", r.Method, r.URL.Path, v)
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

func (af *attackFixture) sendHostile(t testing.TB, hr hostileRequest) reply {
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
	req, err := http.NewRequest(method, af.srv.URL+hr.path, body)
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
	resp, err := af.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v (the server dropped the connection)", method, hr.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode >= 500 {
		af.serverErr.Add(1)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, body: b}
	checkOpenAPI(t, af.openapi, req, sent.Bytes(), r)
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
