package tests_test

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/passkey"
)

// sqliteStore is a SQLStore over a SQLite database of the test's own,
// and that database, to count the rows of.
func sqliteStore(t *testing.T) (*passkey.SQLStore, *sql.DB) {
	db, err := sql.Open("sqlite", nmauth.SQLiteDSN(filepath.Join(t.TempDir(), "passkeys.db")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return sqlStore(t, db, nmauth.DialectSQLite), db
}

// countChallenges counts the stored challenges of passwordless logins.
func countChallenges(t *testing.T, db *sql.DB) int {
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM nmauth_passkey_challenges WHERE flow = 'passwordless'`).Scan(&n); err != nil {
		t.Error(err)
	}
	return n
}

// TestPasswordlessBeginLimited sends 400 passwordless begins from one
// address, which needs no credential and writes a challenge each: the
// burst of the per-client limit (20) is answered, and every later one
// gets 429 with Retry-After, in the profile's envelope, and writes
// nothing. A right passwordless login costs its address one attempt, its
// begin: the finish that logs in gives its own back.
func TestPasswordlessBeginLimited(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		store, db := sqliteStore(t)
		h := newHarness(t, options{wire: w, store: store, passwordless: true, clientLimit: true})
		// 400 calls in the spec profile; in Netmaker's, enough to see its
		// envelope.
		calls := 400
		if w == nmauth.WireNetmaker {
			calls = 25
		}
		counts := map[int]int{}
		for i := range calls {
			r := h.post("/api/users/adm/passkey/begin", "", nil)
			counts[r.status]++
			if i >= 20 {
				wantError(t, r, http.StatusTooManyRequests)
				if r.header.Get("Retry-After") == "" {
					t.Fatalf("429 without Retry-After")
				}
			}
		}
		if counts[200] != 20 || counts[429] != calls-20 {
			t.Errorf("answers %v, want 20 × 200 and %d × 429", counts, calls-20)
		}
		if n := countChallenges(t, db); n != 20 {
			t.Errorf("%d challenges stored, want 20", n)
		}

		// A new address (the limit's buckets refill in 20 s) and a user
		// with a discoverable passkey.
		h.clock.Advance(time.Minute)
		h.addUser("alice")
		k := newSoftKey(t)
		h.register("alice", h.userToken("alice"), "laptop", k)
		h.clock.Advance(time.Minute)
		logins := 0
		for logins < 40 {
			r := h.post("/api/users/adm/passkey/begin", "", nil)
			if r.status != http.StatusOK {
				break
			}
			if r := h.finishPasswordless(k.get(t, assertion(optionsOf(t, r), k))); r.status != http.StatusOK {
				break
			}
			logins++
		}
		// Without the finish's attempt given back, 10 logins would fit in
		// the burst of 20.
		if logins != 19 {
			t.Errorf("%d passwordless logins from one address before a 429, want 19", logins)
		}
	})
}

// TestChallengesBoundedUnderFlood sends 10,000 passwordless begins from
// 1,000 addresses, in two halves with the challenges' lifetime between
// them, through a Manager whose room is 50 challenges a flow: the table
// never holds more than 50, each half gets 50 challenges and the rest
// 503 with Retry-After, expired challenges leave, and the other flows
// keep their room.
func TestChallengesBoundedUnderFlood(t *testing.T) {
	const room, addresses, perAddress = 50, 1000, 5
	for _, b := range []struct {
		name string
		open func(t *testing.T) (passkey.Store, *sql.DB)
	}{
		{"memory", func(t *testing.T) (passkey.Store, *sql.DB) { return passkey.NewMemoryStore(), nil }},
		{"sqlite", func(t *testing.T) (passkey.Store, *sql.DB) { return sqliteStore(t) }},
		{"postgres", func(t *testing.T) (passkey.Store, *sql.DB) {
			db := postgresDatabase(t)(t)
			return sqlStore(t, db, nmauth.DialectPostgres), db
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			store, db := b.open(t)
			h := newHarness(t, options{store: store, passwordless: true, clientLimit: true, maxChallenges: room})
			handler := h.pk.Handler()
			stored := func() int {
				if db == nil {
					return -1
				}
				return countChallenges(t, db)
			}
			var most atomic.Int64
			flood := func() map[int]int {
				var wg sync.WaitGroup
				done := make(chan struct{})
				if db != nil {
					wg.Go(func() {
						for {
							most.Store(max(most.Load(), int64(stored())))
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
							req := httptest.NewRequest(http.MethodPost, "/api/users/adm/passkey/begin", nil)
							req.RemoteAddr = addr
							rec := httptest.NewRecorder()
							handler.ServeHTTP(rec, req)
							if rec.Code == http.StatusServiceUnavailable && rec.Header().Get("Retry-After") == "" {
								t.Error("503 without Retry-After")
							}
							mu.Lock()
							counts[rec.Code]++
							mu.Unlock()
						}
					})
				}
				for i := range addresses * perAddress {
					a := i % addresses
					jobs <- fmt.Sprintf("10.0.%d.%d:4000", a/256, a%256)
				}
				close(jobs)
				workers.Wait()
				close(done)
				wg.Wait()
				return counts
			}
			for half := range 2 {
				counts := flood()
				if counts[200] != room || counts[503] != addresses*perAddress-room {
					t.Errorf("half %d: answers %v, want %d × 200 and the rest 503", half+1, counts, room)
				}
				if n := stored(); db != nil && n != room {
					t.Errorf("half %d: %d challenges stored, want %d", half+1, n, room)
				}
				if half == 0 {
					// Full: the envelope says so, and a user's registration,
					// another flow, still begins.
					r := h.post("/api/users/adm/passkey/begin", "", nil)
					wantError(t, r, http.StatusServiceUnavailable)
					if r.header.Get("Retry-After") == "" {
						t.Error("503 without Retry-After")
					}
					h.addUser("alice")
					h.beginRegistration("alice", h.userToken("alice"), "laptop")
					h.clock.Advance(challengeTTL)
				}
			}
			if m := most.Load(); m > room {
				t.Errorf("the table held %d challenges at one moment, above its room of %d", m, room)
			}
		})
	}
}
