package nmauth_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

// faultyStore wraps a Store and, once broken, makes every call fail or
// hang until its context ends, or beyond it when deaf: a database that is
// down, locked or slow.
type faultyStore struct {
	nmauth.Store
	mu   sync.Mutex
	mode string // "", "fail", "hang", "deaf"
	deaf chan struct{}
}

var errDiskOnFire = errors.New("disk on fire")

func (s *faultyStore) fault(ctx context.Context) error {
	s.mu.Lock()
	mode := s.mode
	s.mu.Unlock()
	switch mode {
	case "fail":
		return errDiskOnFire
	case "hang":
		<-ctx.Done()
		return ctx.Err()
	case "deaf":
		<-s.deaf // ignores its context, as a stuck driver might
		return errDiskOnFire
	}
	return nil
}

func (s *faultyStore) break_(mode string) {
	s.mu.Lock()
	s.mode = mode
	s.mu.Unlock()
}

func (s *faultyStore) GetUser(ctx context.Context, name string) (nmauth.User, error) {
	if err := s.fault(ctx); err != nil {
		return nmauth.User{}, err
	}
	return s.Store.GetUser(ctx, name)
}

func (s *faultyStore) UpdateUser(ctx context.Context, name string, fn func(*nmauth.User) error) error {
	if err := s.fault(ctx); err != nil {
		return err
	}
	return s.Store.UpdateUser(ctx, name, fn)
}

func (s *faultyStore) GetHost(ctx context.Context, id string) (nmauth.Host, error) {
	if err := s.fault(ctx); err != nil {
		return nmauth.Host{}, err
	}
	return s.Store.GetHost(ctx, id)
}

func (s *faultyStore) UpdateHost(ctx context.Context, id string, fn func(*nmauth.Host) error) error {
	if err := s.fault(ctx); err != nil {
		return err
	}
	return s.Store.UpdateHost(ctx, id, fn)
}

// faultFixture is a fixture over a store that can be broken.
func faultFixture(t *testing.T, store nmauth.Store, logs *bytes.Buffer) *fixture {
	t.Helper()
	return newFixture(t, func(c *nmauth.Config) {
		c.Store = store
		c.StoreTimeout = 100 * time.Millisecond
		if logs == nil {
			logs = &bytes.Buffer{}
		}
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
}

// wantNoCredentialVerdict is the netclient rule: a right password is
// never answered 401 (netclient drops its configuration on a 401). A store
// fault is 503 with Retry-After, for right and wrong passwords alike.
func wantUnavailable(t *testing.T, r reply) {
	t.Helper()
	wantError(t, r, http.StatusServiceUnavailable)
	if r.header.Get("Retry-After") == "" {
		t.Fatalf("503 without Retry-After: %v", r.header)
	}
}

func hostLogin(f *fixture, password string) reply {
	return f.do("/api/hosts/adm/authenticate", "", map[string]string{"id": "host-1", "password": password})
}

// TestStoreFaults: a store that fails, hangs past the deadline or ignores
// its context is answered 503 with Retry-After within the deadline, for
// right and wrong passwords alike, on every route that reads it (issue
// 11: before, 500 without Retry-After, or a wait of the whole lock).
func TestStoreFaults(t *testing.T) {
	for _, mode := range []string{"fail", "hang", "deaf"} {
		t.Run(mode, func(t *testing.T) {
			store := &faultyStore{Store: nmauth.NewMemoryStore(), deaf: make(chan struct{})}
			t.Cleanup(func() { close(store.deaf) })
			f := faultFixture(t, store, nil)
			f.addUser("alice", "correct horse battery")
			f.addHost("host-1", "", "host-password-1")
			token := f.userToken("alice", "correct horse battery")
			store.break_(mode)
			wantUnavailable(t, hostLogin(f, "host-password-1"))
			wantUnavailable(t, hostLogin(f, "wrong password"))
			wantUnavailable(t, f.loginUser("alice", "correct horse battery"))
			wantUnavailable(t, f.loginUser("alice", "wrong password"))
			wantUnavailable(t, f.do("/api/users/alice/auth/init-totp", token, nil))
			if err := f.auth.Ready(context.Background()); !errors.Is(err, nmauth.ErrStoreUnavailable) {
				t.Errorf("Ready = %v, want ErrStoreUnavailable", err)
			}
			store.break_("")
			wantStatus(t, hostLogin(f, "host-password-1"), http.StatusOK)
			if err := f.auth.Ready(context.Background()); err != nil {
				t.Errorf("Ready after the fault = %v", err)
			}
		})
	}
}

// TestMalformedHostHashIsAServerFault: a host whose stored hash is
// malformed gets 500 and an error log naming it, never 401 (issue 11:
// before, 401 and no log, and netclient dropped the host).
func TestMalformedHostHashIsAServerFault(t *testing.T) {
	var logs bytes.Buffer
	store := nmauth.NewMemoryStore()
	f := faultFixture(t, store, &logs)
	f.addHost("host-1", "", "host-password-1")
	if err := store.UpdateHost(context.Background(), "host-1", func(h *nmauth.Host) error {
		h.PasswordHash = "$argon2id$v=19$m=19456,t=2,p=1$garbage"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wantError(t, hostLogin(f, "host-password-1"), http.StatusInternalServerError)
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "host-1") || strings.Contains(logs.String(), "garbage") {
		t.Errorf("log %q: want an error naming host-1 and not the hash", logs.String())
	}
}

// TestStoreErrorsLoggedAtABoundedRate: a store down under load logs one
// line per second with the count of lines left out.
func TestStoreErrorsLoggedAtABoundedRate(t *testing.T) {
	var logs bytes.Buffer
	store := &faultyStore{Store: nmauth.NewMemoryStore()}
	f := faultFixture(t, store, &logs)
	f.addUser("alice", "correct horse battery")
	store.break_("fail")
	for range 50 {
		f.auth.Ready(context.Background())
	}
	f.clock.Advance(2 * time.Second)
	f.auth.Ready(context.Background())
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "not_logged_since_last=49") {
		t.Fatalf("log lines %q, want 2, the second counting 49 left out", lines)
	}
}

// TestSQLiteFaults: a SQLite database whose write lock another connection
// holds, and one that cannot be written, refuse right and wrong passwords
// alike with 503 (issue 11: before, a read-only or full database answered
// a wrong password 500 and a right one 200, a password oracle).
func TestSQLiteFaults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nmauth.db")
	db := openSQLite(t, path)
	store := newSQLStore(t, db, nmauth.DialectSQLite)
	f := faultFixture(t, store, nil)
	f.addUser("alice", "correct horse battery")
	f.addHost("host-1", "", "host-password-1")

	t.Run("write lock held by another connection", func(t *testing.T) {
		other := openSQLite(t, path)
		tx, err := other.BeginTx(context.Background(), nil) // _txlock=immediate: takes the write lock
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec("UPDATE nmauth_users SET disabled = disabled"); err != nil {
			t.Fatal(err)
		}
		wantUnavailable(t, hostLogin(f, "host-password-1"))
		wantUnavailable(t, f.loginUser("alice", "correct horse battery"))
		wantUnavailable(t, f.loginUser("alice", "wrong password"))
		tx.Rollback()
		wantStatus(t, hostLogin(f, "host-password-1"), http.StatusOK)
	})
	t.Run("read-only database", func(t *testing.T) {
		ro, err := sql.Open("sqlite", nmauth.SQLiteDSN(path))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ro.Close() })
		ro.SetMaxOpenConns(1) // so the pragma below holds for every call
		roStore := newSQLStore(t, ro, nmauth.DialectSQLite)
		if _, err := ro.Exec("PRAGMA query_only = 1"); err != nil {
			t.Fatal(err)
		}
		g := faultFixture(t, roStore, nil)
		wantUnavailable(t, g.loginUser("alice", "correct horse battery"))
		wantUnavailable(t, g.loginUser("alice", "wrong password"))
		wantUnavailable(t, hostLogin(g, "host-password-1"))
		if u := getUser(t, store, "alice"); u.PasswordFailures != 0 {
			t.Errorf("PasswordFailures = %d after refused attempts", u.PasswordFailures)
		}
	})
}

// TestSQLiteFull: a SQLite database that cannot grow (max_page_count on
// the store's own connections, so SQLite itself answers SQLITE_FULL)
// refuses with 503 and Retry-After every login whose attempt it cannot
// record, right passwords included: never 401 for a right password, never
// a 200 whose attempt went unrecorded (issue 11: before, a full database
// answered a wrong password 500 and a right one 200). A full database
// still rewrites a record in place, so a login whose record does not grow
// is recorded and answered as usual; each login from a new address adds
// one to the record, and the first that does not fit is refused. Once
// space is freed, logins are recorded again.
func TestSQLiteFull(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nmauth.db")
	db, err := sql.Open("sqlite", nmauth.SQLiteDSN(path)+"&_pragma=max_page_count(64)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	store := newSQLStore(t, db, nmauth.DialectSQLite)
	f := newFixture(t, func(c *nmauth.Config) {
		c.Store = store
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	})
	f.addUser("alice", "correct horse battery")
	ctx := context.Background()
	fillers := 0
	for ; ; fillers++ {
		err := store.CreateUser(ctx, sampleUser(fmt.Sprintf("filler-%05d", fillers)))
		if err != nil {
			if !strings.Contains(err.Error(), "SQLITE_FULL") && !strings.Contains(err.Error(), "(13)") {
				t.Fatalf("filling stopped by %v, want SQLITE_FULL (13)", err)
			}
			break
		}
	}
	var pages int
	if err := db.QueryRow("PRAGMA page_count").Scan(&pages); err != nil || pages != 64 {
		t.Fatalf("page_count = %d, %v; want the database at its 64 pages", pages, err)
	}

	login := func(client, password string) reply {
		req, err := http.NewRequest(http.MethodPost, f.srv.URL+"/api/users/adm/authenticate",
			strings.NewReader(`{"username":"alice","password":"`+password+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", client)
		return f.send(req)
	}
	failures := func() int { return getUser(t, store, "alice").PasswordFailures }

	// Wrong passwords from new addresses: recorded while the record fits,
	// then refused with 503.
	refused := false
	for i := range 40 {
		before := failures()
		r := login(fmt.Sprintf("198.51.100.%d", i), "wrong password")
		if r.status == http.StatusServiceUnavailable {
			wantUnavailable(t, r)
			if after := failures(); after != before {
				t.Fatalf("refused attempt %d changed PasswordFailures from %d to %d", i, before, after)
			}
			refused = true
			break
		}
		wantError(t, r, http.StatusUnauthorized)
		if after := failures(); after != before+1 {
			t.Fatalf("wrong password %d answered 401 with PasswordFailures %d → %d, want it recorded", i, before, after)
		}
	}
	if !refused {
		t.Fatal("40 logins from new addresses all fitted in the full database; the test never reached a refused write")
	}
	// The netclient rule: the right password from a new address is not
	// recorded either, and is answered 503, never 401 or 200.
	before := getUser(t, store, "alice")
	wantUnavailable(t, login("203.0.113.1", "correct horse battery"))
	wantUnavailable(t, login("203.0.113.2", "wrong password"))
	if after := getUser(t, store, "alice"); after.PasswordFailures != before.PasswordFailures || len(after.PasswordClients) != len(before.PasswordClients) {
		t.Fatalf("refused logins changed the record: %d failures from %d addresses, was %d from %d",
			after.PasswordFailures, len(after.PasswordClients), before.PasswordFailures, len(before.PasswordClients))
	}

	// Freeing space: the same logins are recorded and answered again.
	for i := range fillers / 2 {
		if err := store.DeleteUser(ctx, fmt.Sprintf("filler-%05d", i)); err != nil {
			t.Fatal(err)
		}
	}
	wantStatus(t, login("203.0.113.1", "correct horse battery"), http.StatusOK)
	if u := getUser(t, store, "alice"); u.PasswordFailures != 0 || !slices.ContainsFunc(u.PasswordClients, func(c nmauth.ClientFailures) bool {
		return c.Client == "203.0.113.1" && c.Known
	}) {
		t.Errorf("login after freeing space left %d failures and clients %+v, want the success recorded", u.PasswordFailures, u.PasswordClients)
	}
}
