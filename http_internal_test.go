package nmauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/nmauth/nmauth/internal/clientaddr"
	"github.com/nmauth/nmauth/internal/wire"
)

// TestWriteErrorWaits checks the two answers that tell a client to come
// back later: the envelope, the status and a Retry-After in whole seconds.
func TestWriteErrorWaits(t *testing.T) {
	a, err := New(Config{Store: NewMemoryStore(), Secrets: [][]byte{bytes.Repeat([]byte{1}, 32)}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		err        error
		status     int
		retryAfter string
	}{
		{&RetryError{Reason: ErrOverloaded, RetryAfter: time.Second}, http.StatusServiceUnavailable, "1"},
		{&RetryError{Reason: ErrThrottled, RetryAfter: 1500 * time.Millisecond}, http.StatusTooManyRequests, "2"},
		{&RetryError{Reason: ErrThrottled, RetryAfter: 15 * time.Minute}, http.StatusTooManyRequests, "900"},
		{errors.New("disk on fire: /var/lib/secret"), http.StatusInternalServerError, ""},
	}
	for _, tc := range tests {
		rec := httptest.NewRecorder()
		a.WriteError(rec, httptest.NewRequest(http.MethodPost, "/", nil), tc.err)
		var env wire.SpecEnvelope
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
			t.Fatalf("%v: body %q: %v", tc.err, rec.Body, err)
		}
		if rec.Code != tc.status || env.Code != tc.status || env.Message == "" {
			t.Errorf("%v: status %d, envelope %+v; want %d", tc.err, rec.Code, env, tc.status)
		}
		if got := rec.Header().Get("Retry-After"); got != tc.retryAfter {
			t.Errorf("%v: Retry-After %q, want %q", tc.err, got, tc.retryAfter)
		}
		if bytes.Contains(rec.Body.Bytes(), []byte("disk")) {
			t.Errorf("internal error text reached the client: %s", rec.Body)
		}
	}
}

// TestForwardedHops: hops with ports are read; a hop that is no address
// does not put the client in the proxy's bucket (issue 14, finding 10).
func TestForwardedHops(t *testing.T) {
	proxy := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	tests := []struct {
		xff  string
		want netip.Addr
	}{
		{"203.0.113.7:5678", netip.MustParseAddr("203.0.113.7")},
		{"[2001:db8::1]:443", netip.MustParseAddr("2001:db8::")},
		{"[2001:db8::1]", netip.MustParseAddr("2001:db8::")},
		{"198.51.100.1, 203.0.113.7:80", netip.MustParseAddr("203.0.113.7")},
		{"unknown", netip.Addr{}},
		{"203.0.113.7, unknown", netip.Addr{}},
	}
	for _, tc := range tests {
		r := httptest.NewRequest("POST", "/", nil)
		r.RemoteAddr = "127.0.0.1:40000"
		r.Header.Set("X-Forwarded-For", tc.xff)
		if got := clientaddr.Forwarded(r, clientaddr.Peer(r.RemoteAddr), proxy); got != tc.want {
			t.Errorf("X-Forwarded-For %q: client %v, want %v", tc.xff, got, tc.want)
		}
	}
}

// FuzzHostLoginAnswer: the host login answer written by hand is the
// bytes encoding/json writes for it, in both wire profiles.
func FuzzHostLoginAnswer(f *testing.F) {
	f.Add("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJoMSJ9.c2ln-_", "3f2504e0-4f89-11d3-9a0c-0305e82c3301")
	f.Add("a<b", "h&1")
	f.Add(`a"b`, "h\\1")
	f.Add("é", "\u2028")
	f.Add("", "")
	auths := map[WireProfile]*Authenticator{}
	for _, p := range []WireProfile{WireSpec, WireNetmaker} {
		a, err := New(Config{Store: NewMemoryStore(), Secrets: [][]byte{[]byte("host-login-answer-root-secret-0123456789")}, Wire: p})
		if err != nil {
			f.Fatal(err)
		}
		auths[p] = a
	}
	f.Fuzz(func(t *testing.T, token, id string) {
		h := HostLogin{AuthToken: token, ID: id}
		for p, a := range auths {
			got, ok := a.hostLoginAnswer(h)
			if !ok {
				continue
			}
			var payload any = h
			if p == WireNetmaker {
				payload = netmakerPayload(h)
			}
			var want bytes.Buffer
			json.NewEncoder(&want).Encode(a.envelope(http.StatusOK, wire.Message(wire.AnswerHostLogin, p == WireNetmaker, false), payload))
			if !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("%v: written %s, encoded %s", p, got, want.Bytes())
			}
		}
	})
}
