package nmauth_test

import (
	"net/http"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

// TestWrongBearersCountAgainstClient: wrong bearer credentials cost the
// client attempts of its limit (issue 38: 3,000 wrong master keys from one
// address got 3,000 answers of 401): of 3,000, a burst gets 401 and the
// rest 429 with Retry-After. Past its limit the client gets 429 for the
// right master key too, so the answers cannot tell a right guess from a
// wrong one, while another client behind the same proxy is served; once
// the limit lets it, the client is served again. A token this server
// signed that has expired is no guess and costs nothing.
func TestWrongBearersCountAgainstClient(t *testing.T) {
	const burst = 20
	f := newFixture(t, func(c *nmauth.Config) {
		c.ClientRate, c.ClientBurst = 1, burst
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	})
	f.addUser("alice", "correct horse battery")
	call := func(client, bearer string) reply {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, f.srv.URL+"/api/users/alice/auth/init-totp", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Forwarded-For", client)
		req.Header.Set("Authorization", "Bearer "+bearer)
		return f.send(req)
	}

	statuses := map[int]int{}
	for i := range 3000 {
		r := call("203.0.113.5", "wrong-master-key-"+strconv.Itoa(i))
		statuses[r.status]++
		if r.status == http.StatusTooManyRequests && r.header.Get("Retry-After") == "" {
			t.Fatalf("429 without Retry-After: %v", r.header)
		}
	}
	if statuses[401] != burst || statuses[429] != 3000-burst {
		t.Fatalf("3,000 wrong master keys from one client: %v; want %d × 401, then 429", statuses, burst)
	}
	if n := f.events.count(nmauth.EventClientThrottled); n != 3000-burst {
		t.Errorf("%d throttled events, want %d", n, 3000-burst)
	}
	wantError(t, call("203.0.113.5", testMasterKey), 429)
	wantStatus(t, call("203.0.113.6", testMasterKey), 200)

	f.clock.Advance(time.Second)
	wantStatus(t, call("203.0.113.5", testMasterKey), 200)
	wantError(t, call("203.0.113.5", "forged.jwt.token"), 401)
	wantError(t, call("203.0.113.5", "forged.jwt.token"), 429)

	token := f.userToken("alice", "correct horse battery")
	f.clock.Advance(2 * time.Hour)
	for range 3 * burst {
		wantError(t, call("198.51.100.9", token), 401)
	}
}
