package nmauth_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

func TestClientLimit(t *testing.T) {
	f := newFixture(t, func(c *nmauth.Config) { c.ClientRate, c.ClientBurst = 1, 3 })
	f.addUser("alice", "correct horse battery")
	// A spray: one wrong password on each of many accounts, from one client.
	for i := range 3 {
		wantError(t, f.loginUser("user"+string(rune('a'+i)), "some password"), 401)
	}
	r := f.loginUser("alice", "correct horse battery")
	wantError(t, r, 429)
	if r.header.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	if u, _ := f.store.GetUser(t.Context(), "alice"); nmauth.StateOf(&u.State).PasswordFailures != 0 {
		t.Fatal("a refused attempt reached the account")
	}
	// The limit covers host login and verify-totp too.
	wantError(t, f.do("/api/hosts/adm/authenticate", "", map[string]string{"id": "h", "password": "p"}), 429)
	wantError(t, f.do("/api/users/alice/auth/verify-totp", "x.y.z", map[string]string{"totp": "123456"}), 429)
	if f.events.count(nmauth.EventClientThrottled) != 3 {
		t.Fatalf("throttled attempts not reported")
	}
	f.clock.Advance(time.Second)
	wantStatus(t, f.loginUser("alice", "correct horse battery"), 200)
}

func TestClientLimitBehindProxy(t *testing.T) {
	loopback := netip.MustParsePrefix("127.0.0.0/8")
	f := newFixture(t, func(c *nmauth.Config) {
		c.ClientRate, c.ClientBurst = 1, 1
		c.TrustedProxies = []netip.Prefix{loopback}
	})
	login := func(xff ...string) int {
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/api/users/adm/authenticate",
			strings.NewReader(`{"username":"nobody","password":"some password"}`))
		req.Header.Set("Content-Type", "application/json")
		for _, v := range xff {
			req.Header.Add("X-Forwarded-For", v)
		}
		return f.send(req).status
	}
	if s := login("203.0.113.1"); s != 401 {
		t.Fatalf("first attempt of a client: %d", s)
	}
	if s := login("203.0.113.1"); s != 429 {
		t.Fatalf("second attempt of the same client: %d", s)
	}
	// A client cannot escape by prepending a forged address: the proxy's
	// own entry is the rightmost and is the one counted.
	if s := login("198.51.100.7, 203.0.113.1"); s != 429 {
		t.Fatalf("forged leading hop escaped the limit: %d", s)
	}
	if s := login("203.0.113.2"); s != 401 {
		t.Fatalf("another client behind the proxy: %d", s)
	}
	// IPv6 clients are counted per /64.
	login("2001:db8:1:2::1")
	if s := login("2001:db8:1:2::ffff"); s != 429 {
		t.Fatalf("same /64: %d", s)
	}
}

func TestClientLimitIgnoresForwardedWithoutTrustedProxy(t *testing.T) {
	f := newFixture(t, func(c *nmauth.Config) { c.ClientRate, c.ClientBurst = 1, 1 })
	for i, want := range []int{401, 429} {
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/api/users/adm/authenticate",
			strings.NewReader(`{"username":"nobody","password":"some password"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", "203.0.113."+string(rune('1'+i)))
		if s := f.send(req).status; s != want {
			t.Fatalf("attempt %d: %d, want %d", i, s, want)
		}
	}
}

// TestClientLimitGivesBackRightLogins checks that a right password gives
// its attempt back, so that many logins from one address (a fleet behind
// one NAT address, each of its members an account of its own) are not
// throttled by their own successes, while wrong ones still use the
// budget up, and the right password waits with them.
func TestClientLimitGivesBackRightLogins(t *testing.T) {
	f := newFixture(t, func(c *nmauth.Config) { c.ClientRate, c.ClientBurst = 1, 3 })
	for i := range 10 {
		f.addUser(fmt.Sprint("user-", i), "correct horse battery")
	}
	for i := range 10 {
		if r := f.loginUser(fmt.Sprint("user-", i), "correct horse battery"); r.status != 200 {
			t.Fatalf("right login of user-%d from one address: %d", i, r.status)
		}
	}
	for range 3 {
		wantError(t, f.loginUser("user-0", "wrong password"), 401)
	}
	wantError(t, f.loginUser("user-1", "correct horse battery"), 429)
	f.clock.Advance(time.Second)
	wantStatus(t, f.loginUser("user-1", "correct horse battery"), 200)
}

// TestClientLimitRepeatedRightLogins checks that one account's right
// logins, sent again and again from one address, get their attempt back
// once a minute, not each time: they use the client's budget up as any
// other attempt, and cannot flood the gates from one address (issue 38).
// A minute later the account's right login gives its attempt back again.
func TestClientLimitRepeatedRightLogins(t *testing.T) {
	const burst = 3
	f := newFixture(t, func(c *nmauth.Config) { c.ClientRate, c.ClientBurst = 1, burst })
	f.addUser("mallory", "correct horse battery")
	for i := range burst + 1 {
		if r := f.loginUser("mallory", "correct horse battery"); r.status != 200 {
			t.Fatalf("right login %d of mallory: %d", i+1, r.status)
		}
	}
	wantError(t, f.loginUser("mallory", "correct horse battery"), 429)
	f.clock.Advance(time.Minute)
	for i := range burst {
		if r := f.loginUser("mallory", "correct horse battery"); r.status != 200 {
			t.Fatalf("right login %d of mallory a minute later: %d", i+1, r.status)
		}
	}
}

// TestClientLimitGivesBackNoGuesses checks that giving back right
// attempts gains a password sprayer nothing: an attacker who knows one
// right credential and sends it between its guesses gets no more guesses
// evaluated than ClientBurst plus ClientRate a second, as one who only
// guesses.
func TestClientLimitGivesBackNoGuesses(t *testing.T) {
	const burst, seconds = 5, 60
	for _, withRight := range []bool{false, true} {
		f := newFixture(t, func(c *nmauth.Config) { c.ClientRate, c.ClientBurst = 1, burst })
		evaluated := 0
		check := f.auth.Limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") == "Bearer right" {
				tok, err := f.auth.IssueNodeToken(r.Context(), "home", "node-1")
				if err != nil {
					t.Error(err)
				}
				f.auth.WriteResponse(w, r, http.StatusOK, "ok", tok)
				return
			}
			evaluated++
			f.auth.WriteError(w, r, nmauth.ErrInvalidCredentials)
		}))
		send := func(key string) int {
			req := httptest.NewRequest(http.MethodPost, "/api/nodes/home/authenticate", nil)
			req.RemoteAddr = "192.0.2.66:4000"
			req.Header.Set("Authorization", "Bearer "+key)
			rec := httptest.NewRecorder()
			check.ServeHTTP(rec, req)
			return rec.Code
		}
		// Ten guesses a second, each after the right key when withRight.
		for range seconds * 10 {
			if withRight {
				send("right")
			}
			send("guess")
			f.clock.Advance(100 * time.Millisecond)
		}
		if evaluated > burst+seconds+1 || evaluated < seconds {
			t.Errorf("with the right key between guesses %v: %d guesses evaluated in %d s, want about %d",
				withRight, evaluated, seconds, burst+seconds)
		}
	}
}

// TestClientLimitKeepsUnprovedSuccesses checks that only a request that
// proved a credential gets its attempt back: a route that answers 200
// without a login (a ceremony begun, a challenge written) is limited like
// wrong guesses, while one whose handler mints a node token for the
// request, an application's node login, is not.
func TestClientLimitKeepsUnprovedSuccesses(t *testing.T) {
	f := newFixture(t, func(c *nmauth.Config) { c.ClientRate, c.ClientBurst = 1, 5 })
	begin := f.auth.Limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.auth.WriteResponse(w, r, http.StatusOK, "challenge written", nil)
	}))
	nodeLogin := f.auth.Limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The token is minted with another context than the request's:
		// that proves nothing for this request.
		ctx := r.Context()
		if r.Header.Get("Authorization") == "" {
			ctx = context.Background()
		}
		tok, err := f.auth.IssueNodeToken(ctx, "home", "node-1")
		if err != nil {
			t.Error(err)
		}
		f.auth.WriteResponse(w, r, http.StatusOK, "node logged in", tok)
	}))
	send := func(h http.Handler, remote string, proved bool) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/x", nil)
		req.RemoteAddr = remote
		if proved {
			req.Header.Set("Authorization", "Bearer node-key")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	codes := func(h http.Handler, remote string, proved bool) []int {
		var out []int
		for range 8 {
			out = append(out, send(h, remote, proved).Code)
		}
		return out
	}
	want := []int{200, 200, 200, 200, 200, 429, 429, 429}
	if got := codes(begin, "192.0.2.1:1000", false); !slices.Equal(got, want) {
		t.Errorf("a route that proves nothing: %v, want %v", got, want)
	}
	if got := codes(nodeLogin, "192.0.2.2:1000", false); !slices.Equal(got, want) {
		t.Errorf("a token minted outside the request: %v, want %v", got, want)
	}
	if got := codes(nodeLogin, "192.0.2.3:1000", true); slices.Contains(got, 429) {
		t.Errorf("node logins that minted their token: %v, want no 429", got)
	}
	rec := send(begin, "192.0.2.1:1001", false)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" {
		t.Errorf("past the burst: %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
}

// lockedLog is a log destination safe for concurrent writers.
type lockedLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// oneAddressFloor is how many attempts one address makes in a minute
// before the watch asks whether it made most of them.
const oneAddressFloor = 64

// TestProxyWatch checks the two warnings of a reverse proxy that is not
// among the trusted proxies: X-Forwarded-For from an untrusted peer, and
// one address making most attempts. Each is counted in Stats and logged
// at most once a minute.
func TestProxyWatch(t *testing.T) {
	var logged lockedLog
	f := newFixture(t, func(c *nmauth.Config) {
		c.ClientRate, c.ClientBurst = 1, 20
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
		c.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	})
	check := f.auth.Limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.auth.WriteError(w, r, nmauth.ErrInvalidCredentials)
	}))
	send := func(peer string, xff string) {
		req := httptest.NewRequest(http.MethodPost, "/login", nil)
		req.RemoteAddr = peer + ":4000"
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		check.ServeHTTP(httptest.NewRecorder(), req)
	}
	lines := func(what string) int { return strings.Count(logged.String(), what) }
	const untrusted = "X-Forwarded-For or Forwarded from an address that is not a trusted proxy"
	const oneAddress = "most login attempts of this minute come from one address"

	send("192.0.2.1", "203.0.113.9")
	send("192.0.2.1", "203.0.113.10")
	send("10.1.2.3", "203.0.113.11") // a trusted proxy: no warning
	if s := f.auth.Stats(); s.ForwardedUntrusted != 2 {
		t.Errorf("ForwardedUntrusted = %d, want 2", s.ForwardedUntrusted)
	}
	if n := lines(untrusted); n != 1 || !strings.Contains(logged.String(), "peer=192.0.2.1") {
		t.Errorf("%d lines about the untrusted peer, want 1 naming it:\n%s", n, logged.String())
	}
	f.clock.Advance(time.Minute)
	send("192.0.2.1", "203.0.113.12")
	if n := lines(untrusted); n != 2 {
		t.Errorf("a minute later: %d lines, want 2", n)
	}

	// Three clients in turn: none makes most attempts.
	f.clock.Advance(time.Minute)
	for range 2 * oneAddressFloor {
		for _, c := range []string{"203.0.113.1", "203.0.113.2", "203.0.113.3"} {
			send("10.0.0.1", c)
		}
	}
	if s := f.auth.Stats(); s.OneAddressMinutes != 0 || lines(oneAddress) != 0 {
		t.Fatalf("three clients in turn: OneAddressMinutes %d, log:\n%s", s.OneAddressMinutes, logged.String())
	}
	if s := f.auth.Stats(); s.ClientAddresses < 3 {
		t.Errorf("Addresses = %d, want at least the 3 clients of this minute", s.ClientAddresses)
	}
	// A proxy that sends no X-Forwarded-For: its own address makes every
	// attempt. One line and one minute counted, however many attempts.
	f.clock.Advance(time.Minute)
	for range 4 * oneAddressFloor {
		send("10.0.0.1", "")
	}
	if s := f.auth.Stats(); s.OneAddressMinutes != 1 || lines(oneAddress) != 1 ||
		!strings.Contains(logged.String(), "client=10.0.0.1") {
		t.Errorf("one address: OneAddressMinutes %d, log:\n%s", s.OneAddressMinutes, logged.String())
	}
}

// TestClientLimitAllocations: Limit costs a request it lets through one
// allocation, the request with its context, which names the client (as
// the event of a login behind it shows) and, for an attempt it counted,
// whether the request proved a credential; and WithClientAddr costs one.
func TestClientLimitAllocations(t *testing.T) {
	f := newFixture(t, func(c *nmauth.Config) { c.ClientRate, c.ClientBurst = 1e6, 1e6 })
	var seen netip.Addr
	limited := f.auth.Limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, _ = nmauth.ClientAddrOf(r.Context())
	}))
	req := httptest.NewRequest(http.MethodPost, "/api/nodes/home/authenticate", nil)
	req.RemoteAddr = "192.0.2.66:4000"
	var w http.ResponseWriter = httptest.NewRecorder()
	limited.ServeHTTP(w, req) // the first attempt of an address makes its bucket
	if allocs := testing.AllocsPerRun(100, func() { limited.ServeHTTP(w, req) }); allocs > 1 {
		t.Errorf("%v allocations per request through Limit, want at most 1", allocs)
	}
	if want := netip.MustParseAddr("192.0.2.66"); seen != want {
		t.Errorf("the route behind Limit saw the client %v, want %v", seen, want)
	}
	addr := netip.MustParseAddr("203.0.113.9")
	var ctx context.Context
	if allocs := testing.AllocsPerRun(100, func() { ctx = nmauth.WithClientAddr(t.Context(), addr) }); allocs > 1 {
		t.Errorf("%v allocations per WithClientAddr, want at most 1", allocs)
	}
	if got, ok := nmauth.ClientAddrOf(ctx); !ok || got != addr {
		t.Errorf("WithClientAddr's context names %v (%v), want %v", got, ok, addr)
	}
}

// BenchmarkLimit serves an empty route behind Limit, whose bucket the
// first request made, so that the figure is what Limit adds to a request
// it counts:
//
//	go test -run '^$' -bench '^BenchmarkLimit$' -benchmem .
func BenchmarkLimit(b *testing.B) {
	f := newFixture(b, func(c *nmauth.Config) { c.ClientRate, c.ClientBurst = 1e6, 1e6 })
	limited := f.auth.Limit(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	req := httptest.NewRequest(http.MethodPost, "/api/nodes/home/authenticate", nil)
	req.RemoteAddr = "192.0.2.66:4000"
	var w http.ResponseWriter = httptest.NewRecorder()
	limited.ServeHTTP(w, req)
	b.ReportAllocs()
	for b.Loop() {
		limited.ServeHTTP(w, req)
	}
}
