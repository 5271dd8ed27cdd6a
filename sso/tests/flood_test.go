package tests_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/sso"
)

// wantEnvelope checks a refusal: its status, Retry-After, and the
// envelope with that code.
func wantEnvelope(t *testing.T, what string, resp *http.Response, status int) {
	t.Helper()
	var env struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	err := json.NewDecoder(resp.Body).Decode(&env)
	resp.Body.Close()
	if resp.StatusCode != status || resp.Header.Get("Retry-After") == "" || err != nil || env.Code != status || env.Message == "" {
		t.Fatalf("%s: %d, Retry-After %q, envelope %+v (%v); want %d with Retry-After in the envelope",
			what, resp.StatusCode, resp.Header.Get("Retry-After"), env, err, status)
	}
}

// stoppedClock gives the world an Authenticator whose clock stands still,
// so that the per-client limit refills nothing however long a test takes.
func stoppedClock(t *testing.T, c *sso.Config) {
	at := time.Now()
	ext := new(nmauth.Extension)
	_, err := nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{[]byte("sso-test-root-secret-0123456789abcdef")},
		Now: func() time.Time { return at }, Extensions: []*nmauth.Extension{ext}})
	if err != nil {
		t.Fatal(err)
	}
	c.Extension = ext
}

// TestBeginsLimited sends 400 browser logins, then 400 headless logins,
// from one address: each writes a pending login and proves nothing, so
// the burst of the per-client limit (20) begins and every later one gets
// 429 with Retry-After in the envelope, and writes nothing. A login that
// comes back from the provider with its user gives its callback's attempt
// back, so that a browser login costs its address one attempt.
func TestBeginsLimited(t *testing.T) {
	t.Run("browser", func(t *testing.T) {
		b := stores(t)["sqlite"]
		w := newWorld(t, func(c *sso.Config) { stoppedClock(t, c); c.Store = b.store })
		client := newBrowser(t).client
		begun := 0
		for i := range 400 {
			resp, err := client.Get(w.app.URL + "/api/oauth/login")
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode == http.StatusFound {
				begun++
				resp.Body.Close()
				continue
			}
			if i < 20 {
				t.Fatalf("login %d within the burst: %d", i+1, resp.StatusCode)
			}
			wantEnvelope(t, fmt.Sprintf("login %d", i+1), resp, http.StatusTooManyRequests)
		}
		if n := countStates(t, b.db); begun != 20 || n != 20 {
			t.Errorf("%d logins begun and %d pending, want 20 and 20", begun, n)
		}
	})
	t.Run("headless", func(t *testing.T) {
		b := stores(t)["sqlite"]
		w := newWorld(t, func(c *sso.Config) { stoppedClock(t, c); c.Store = b.store })
		ws := "ws" + strings.TrimPrefix(w.app.URL, "http") + "/api/oauth/headless"
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		begun := 0
		for i := range 400 {
			conn, resp, err := websocket.Dial(ctx, ws, nil)
			if err == nil {
				if _, _, err := conn.Read(ctx); err != nil {
					t.Fatalf("headless login %d: %v", i+1, err)
				}
				conn.Close(websocket.StatusNormalClosure, "")
				begun++
				continue
			}
			if i < 20 || resp == nil {
				t.Fatalf("headless login %d: %v", i+1, err)
			}
			wantEnvelope(t, fmt.Sprintf("headless login %d", i+1), resp, http.StatusTooManyRequests)
		}
		if n := countStates(t, b.db); begun != 20 || n != 20 {
			t.Errorf("%d headless logins begun and %d pending, want 20 and 20", begun, n)
		}
	})
	t.Run("right logins", func(t *testing.T) {
		w := newWorld(t, func(c *sso.Config) { stoppedClock(t, c) })
		w.link("id1", "alice")
		b := newBrowser(t)
		// Without the callback's attempt given back, 10 logins would spend
		// the burst of 20.
		for i := range 15 {
			if status, v := b.login(w, "alice"); status != http.StatusFound || v.Get("authToken") == "" {
				t.Fatalf("right login %d from one address: %d %v", i+1, status, v)
			}
		}
	})
}

// TestPendingBoundedUnderFlood sends 10,000 browser logins from 1,000
// addresses of 1,000 /24s to a replica whose room is 50 pending logins:
// the table never holds more than 50, 50 logins begin, and the rest get
// 503 with Retry-After in the envelope, or 429 from a group that holds
// one already; a browser or headless login of another group gets 503.
func TestPendingBoundedUnderFlood(t *testing.T) {
	const room, addresses, perAddress = 50, 1000, 10
	for name, b := range stores(t) {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, func(c *sso.Config) { c.Store, c.MaxPending = b.store, room })
			handler := w.sso.Handler()
			var most atomic.Int64
			done := make(chan struct{})
			var sampler sync.WaitGroup
			if b.db != nil {
				sampler.Go(func() {
					for {
						most.Store(max(most.Load(), int64(countStates(t, b.db))))
						select {
						case <-done:
							return
						case <-time.After(5 * time.Millisecond):
						}
					}
				})
			}
			jobs := make(chan string)
			var mu sync.Mutex
			counts := map[int]int{}
			var workers sync.WaitGroup
			for range 8 {
				workers.Go(func() {
					for addr := range jobs {
						req := httptest.NewRequest(http.MethodGet, "/api/oauth/login", nil)
						req.RemoteAddr = addr
						rec := httptest.NewRecorder()
						handler.ServeHTTP(rec, req)
						if rec.Code != http.StatusFound && rec.Header().Get("Retry-After") == "" {
							t.Errorf("%d without Retry-After", rec.Code)
						}
						mu.Lock()
						counts[rec.Code]++
						mu.Unlock()
					}
				})
			}
			for i := range addresses * perAddress {
				a := i % addresses
				jobs <- fmt.Sprintf("10.%d.%d.1:4000", a/256, a%256)
			}
			close(jobs)
			workers.Wait()
			close(done)
			sampler.Wait()
			if counts[http.StatusFound] != room || counts[http.StatusServiceUnavailable]+counts[http.StatusTooManyRequests] != addresses*perAddress-room {
				t.Errorf("answers %v, want %d × 302 and the rest 503 or 429", counts, room)
			}
			if m := most.Load(); b.db != nil && (m > room || countStates(t, b.db) != room) {
				t.Errorf("the table held up to %d pending logins and %d at the end, room %d", m, countStates(t, b.db), room)
			}
			resp, err := newBrowser(t).client.Get(w.app.URL + "/api/oauth/login")
			if err != nil {
				t.Fatal(err)
			}
			wantEnvelope(t, "a browser login while full", resp, http.StatusServiceUnavailable)
			ws := "ws" + strings.TrimPrefix(w.app.URL, "http") + "/api/oauth/headless"
			if _, resp, err := websocket.Dial(context.Background(), ws, nil); err == nil || resp == nil {
				t.Fatalf("a headless login while full: %v", err)
			} else {
				wantEnvelope(t, "a headless login while full", resp, http.StatusServiceUnavailable)
			}
		})
	}
}
