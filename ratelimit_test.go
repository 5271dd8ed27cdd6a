package nmauth_test

import (
	"net/http"
	"net/netip"
	"strings"
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
	if u, _ := f.store.GetUser(t.Context(), "alice"); u.PasswordFailures != 0 {
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
