package integration

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/internal/state"
)

// TestSQLiteFaults: a SQLite database whose write lock another connection
// holds, and one that cannot be written, refuse right and wrong passwords
// alike with 503 (issue 11: before, a read-only or full database answered
// a wrong password 500 and a right one 200, a password oracle).
func TestSQLiteFaults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nmauth.db")
	db := openSQLite(t, path)
	store := newSQLStore(t, db, nmauth.DialectSQLite)
	faulty := func(c *nmauth.Config) { c.StoreTimeout = 100 * time.Millisecond }
	srv := newServer(t, store, faulty)
	createAccounts(t, srv.auth)

	t.Run("write lock held by another connection", func(t *testing.T) {
		other := openSQLite(t, path)
		tx, err := other.BeginTx(context.Background(), nil) // _txlock=immediate: takes the write lock
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec("UPDATE nmauth_users SET disabled = disabled"); err != nil {
			t.Fatal(err)
		}
		wantUnavailable(t, srv.hostLogin(t, "host-password-1"))
		wantUnavailable(t, srv.userLogin(t, "correct horse battery"))
		wantUnavailable(t, srv.userLogin(t, "wrong password"))
		tx.Rollback()
		// Each login has 100 ms here for its Store calls. On a busy
		// machine the first after the release can still miss it (the
		// calls that gave up on the lock finish theirs, and SQLite's busy
		// wait sleeps in steps of up to 100 ms); it must then be refused
		// as above, never 401, and a client that retries gets in.
		wantRecovered(t, func() answer { return srv.hostLogin(t, "host-password-1") })
		wantRecovered(t, func() answer { return srv.userLogin(t, "correct horse battery") })
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
		g := newServer(t, roStore, faulty)
		wantUnavailable(t, g.userLogin(t, "correct horse battery"))
		wantUnavailable(t, g.userLogin(t, "wrong password"))
		wantUnavailable(t, g.hostLogin(t, "host-password-1"))
		if u := getUser(t, store, "alice"); state.Of(u.State).PasswordFailures != 0 {
			t.Errorf("PasswordFailures = %d after refused attempts", state.Of(u.State).PasswordFailures)
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
	srv := newServer(t, store, func(c *nmauth.Config) {
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	})
	if err := srv.auth.Admin().CreateUser(context.Background(), "alice", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
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

	login := func(client, password string) answer {
		return srv.post(t, "/api/users/adm/authenticate", `{"username":"alice","password":"`+password+`"}`, "X-Forwarded-For", client)
	}
	failures := func() int { return state.Of(getUser(t, store, "alice").State).PasswordFailures }

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
		wantStatus(t, r, http.StatusUnauthorized)
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
	if after := getUser(t, store, "alice"); state.Of(after.State).PasswordFailures != state.Of(before.State).PasswordFailures || len(state.Of(after.State).PasswordClients) != len(state.Of(before.State).PasswordClients) {
		t.Fatalf("refused logins changed the record: %d failures from %d addresses, was %d from %d",
			state.Of(after.State).PasswordFailures, len(state.Of(after.State).PasswordClients), state.Of(before.State).PasswordFailures, len(state.Of(before.State).PasswordClients))
	}

	// Freeing space: the same logins are recorded and answered again.
	for i := range fillers / 2 {
		if err := store.DeleteUser(ctx, fmt.Sprintf("filler-%05d", i)); err != nil {
			t.Fatal(err)
		}
	}
	wantStatus(t, login("203.0.113.1", "correct horse battery"), http.StatusOK)
	if u := getUser(t, store, "alice"); state.Of(u.State).PasswordFailures != 0 || !slices.ContainsFunc(state.Of(u.State).PasswordClients, func(c state.Client) bool {
		return c.Client == "203.0.113.1" && c.Known
	}) {
		t.Errorf("login after freeing space left %d failures and clients %+v, want the success recorded", state.Of(u.State).PasswordFailures, state.Of(u.State).PasswordClients)
	}
}

// server is an Authenticator behind a real HTTP server, its handler
// mounted as an application mounts it.
type server struct {
	auth *nmauth.Authenticator
	url  string
}

// newServer serves an Authenticator over store; tweak adjusts its Config.
func newServer(t *testing.T, store nmauth.Store, tweak func(*nmauth.Config)) *server {
	t.Helper()
	secret := make([]byte, 32)
	rand.Read(secret)
	cfg := nmauth.Config{
		Store:   store,
		Secrets: [][]byte{secret},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		// The tests send many attempts from one address; the limit of an
		// address's rate is not what they check.
		ClientRate: -1,
	}
	tweak(&cfg)
	a, err := nmauth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	return &server{auth: a, url: srv.URL}
}

// createAccounts creates the user alice and the host host-1.
func createAccounts(t *testing.T, a *nmauth.Authenticator) {
	t.Helper()
	ctx := context.Background()
	if err := a.Admin().CreateUser(ctx, "alice", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	if err := a.Admin().CreateHost(ctx, "host-1", "", "host-password-1"); err != nil {
		t.Fatal(err)
	}
}

func (s *server) userLogin(t *testing.T, password string) answer {
	return s.post(t, "/api/users/adm/authenticate", `{"username":"alice","password":"`+password+`"}`)
}

func (s *server) hostLogin(t *testing.T, password string) answer {
	return s.post(t, "/api/hosts/adm/authenticate", `{"id":"host-1","password":"`+password+`"}`)
}

// answer is an HTTP answer as the client read it.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// post sends body as JSON to path, with the header lines given as name,
// value pairs.
func (s *server) post(t *testing.T, path, body string, header ...string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

func wantStatus(t *testing.T, r answer, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
}

// wantRecovered retries a login with a right password until it is
// answered 200, for at most 10 seconds; every answer before that must be
// a proper 503.
func wantRecovered(t *testing.T, login func() answer) {
	t.Helper()
	for start := time.Now(); ; {
		r := login()
		if r.status == http.StatusOK {
			return
		}
		wantUnavailable(t, r)
		if time.Since(start) > 10*time.Second {
			t.Fatalf("still 503 %v after the fault was removed", time.Since(start).Round(time.Millisecond))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// wantUnavailable is the netclient rule: a right password is never
// answered 401 (netclient drops its configuration on a 401). A store that
// cannot answer or record is 503 with Retry-After and the error envelope,
// for right and wrong passwords alike.
func wantUnavailable(t *testing.T, r answer) {
	t.Helper()
	wantStatus(t, r, http.StatusServiceUnavailable)
	var envelope struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(r.body, &envelope); err != nil || envelope.Code != r.status || envelope.Message == "" {
		t.Fatalf("503 with body %s, want the error envelope with code 503 and a message", r.body)
	}
	if r.header.Get("Retry-After") == "" {
		t.Fatalf("503 without Retry-After: %v", r.header)
	}
}
