package integration

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/internal/state"
	"github.com/nmauth/nmauth/storetest"
)

// sqlDatabase opens a new handle on one database each time it is called,
// as another process would.
type sqlDatabase func(t *testing.T) *sql.DB

// sqlBackends are the databases the SQL store serves. fresh returns a new,
// empty database; PostgreSQL's fresh skips or fails t when no server is
// configured.
var sqlBackends = []struct {
	name    string
	dialect nmauth.Dialect
	fresh   func(t *testing.T) sqlDatabase
}{
	{"SQLite", nmauth.DialectSQLite, sqliteDatabase},
	{"Postgres", nmauth.DialectPostgres, postgresDatabase},
}

func TestSQLStore(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, d nmauth.Dialect, fresh func(*testing.T) sqlDatabase)
	}{
		{"Conformance", testSQLConformance},
		{"MigrateTwice", testSQLMigrateTwice},
		{"ConcurrentStart", testSQLConcurrentStart},
		{"SchemaNewer", testSQLSchemaNewer},
		{"SecondHandle", testSQLSecondHandle},
		{"CASAcrossHandles", testSQLCASAcrossHandles},
		{"CounterAcrossHandles", testSQLCounterAcrossHandles},
		{"TimeRange", testSQLTimeRange},
		{"EmptySecret", testSQLEmptySecret},
	}
	for _, b := range sqlBackends {
		t.Run(b.name, func(t *testing.T) {
			if b.dialect == nmauth.DialectPostgres {
				postgresDSN(t)
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) { tc.run(t, b.dialect, b.fresh) })
			}
		})
	}
}

func testSQLConformance(t *testing.T, d nmauth.Dialect, fresh func(*testing.T) sqlDatabase) {
	storetest.Run(t, func(t *testing.T) nmauth.Store {
		return newSQLStore(t, fresh(t)(t), d)
	})
}

func testSQLMigrateTwice(t *testing.T, d nmauth.Dialect, fresh func(*testing.T) sqlDatabase) {
	db := fresh(t)(t)
	first := newSQLStore(t, db, d)
	versions := schemaVersions(t, db)
	checkVersionsConsecutive(t, versions)
	if err := first.CreateUser(context.Background(), sampleUser("alice")); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}

	second := newSQLStore(t, db, d)
	if got := schemaVersions(t, db); !slices.Equal(got, versions) {
		t.Errorf("versions after second start = %v, want %v", got, versions)
	}
	checkSameUser(t, second, "alice", sampleUser("alice"))
}

// testSQLConcurrentStart starts several stores at once on an empty
// database, as replicas booting together would: each migration must be
// applied exactly once and no start may fail.
func testSQLConcurrentStart(t *testing.T, d nmauth.Dialect, fresh func(*testing.T) sqlDatabase) {
	open := fresh(t)
	const starts = 4
	dbs := make([]*sql.DB, starts)
	for i := range dbs {
		dbs[i] = open(t)
	}
	errs := make([]error, starts)
	var wg sync.WaitGroup
	for i, db := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = nmauth.NewSQLStore(context.Background(), db, d)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("start %d: %v", i, err)
		}
	}
	checkVersionsConsecutive(t, schemaVersions(t, dbs[0]))
}

// TestSQLiteStartBesideWriter starts a store on a new file while another
// process holds its write lock before the file is in WAL, as a process
// does while it turns a new file to WAL. The store's first connection,
// which would turn the file too, is refused as busy at once, with no busy
// timeout, so NewSQLStore must try it again: it is still waiting when its
// context ends, and starts once the lock is released.
func TestSQLiteStartBesideWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nmauth.db")
	other, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	tx, err := other.Begin() // the write lock, the file still in rollback mode
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("CREATE TABLE other (a)"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := nmauth.NewSQLStore(ctx, openSQLite(t, path), nmauth.DialectSQLite); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("NewSQLStore beside a writer: %v, want it waiting until its context ends", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	db := openSQLite(t, path)
	newSQLStore(t, db, nmauth.DialectSQLite)
	checkPragmas(t, db)
}

func testSQLSchemaNewer(t *testing.T, d nmauth.Dialect, fresh func(*testing.T) sqlDatabase) {
	db := fresh(t)(t)
	newSQLStore(t, db, d)
	versions := schemaVersions(t, db)
	future := versions[len(versions)-1] + 1
	if _, err := db.Exec(fmt.Sprintf("INSERT INTO nmauth_schema_version (version) VALUES (%d)", future)); err != nil {
		t.Fatalf("recording a future version: %v", err)
	}
	if _, err := nmauth.NewSQLStore(context.Background(), db, d); err == nil {
		t.Fatalf("NewSQLStore on schema version %d succeeded, want an error", future)
	}
	if got, want := schemaVersions(t, db), append(versions, future); !slices.Equal(got, want) {
		t.Errorf("versions = %v, want %v", got, want)
	}
}

func testSQLSecondHandle(t *testing.T, d nmauth.Dialect, fresh func(*testing.T) sqlDatabase) {
	ctx := context.Background()
	open := fresh(t)
	a, b := newSQLStore(t, open(t), d), newSQLStore(t, open(t), d)

	alice := sampleUser("alice")
	if err := a.CreateUser(ctx, alice); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	host := nmauth.Host{ID: "host-a", MACAddress: "02:00:00:00:00:01", PasswordHash: "h", CreatedAt: alice.CreatedAt}
	if err := a.CreateHost(ctx, host); err != nil {
		t.Fatalf("CreateHost: %v", err)
	}
	checkSameUser(t, b, "alice", alice)
	if got, err := b.GetHost(ctx, "host-a"); err != nil || got.MACAddress != host.MACAddress || !got.CreatedAt.Equal(host.CreatedAt) {
		t.Errorf("second handle GetHost = %+v, %v; want %+v", got, err, host)
	}
	if err := b.CreateUser(ctx, sampleUser("alice")); !errors.Is(err, nmauth.ErrExists) {
		t.Errorf("second handle CreateUser(existing) = %v, want ErrExists", err)
	}

	err := b.UpdateUser(ctx, "alice", func(u *nmauth.User) error {
		state.Edit(&u.State, func(s *state.User) { s.TOTPLastStep = 42 })
		u.TOTPSecret = nil
		return nil
	})
	if err != nil {
		t.Fatalf("second handle UpdateUser: %v", err)
	}
	state.Edit(&alice.State, func(s *state.User) { s.TOTPLastStep = 42 })
	alice.TOTPSecret = nil
	checkSameUser(t, a, "alice", alice)

	if err := a.DeleteUser(ctx, "alice"); err != nil {
		t.Fatalf("DeleteUser: %v", err)
	}
	if _, err := b.GetUser(ctx, "alice"); !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("second handle GetUser(deleted) = %v, want ErrNotFound", err)
	}
	if users, err := b.ListUsers(ctx, "", 10); err != nil || len(users) != 0 {
		t.Errorf("second handle ListUsers = %d users, %v; want 0, nil", len(users), err)
	}
}

// errStepUsed is what a losing TOTP compare-and-set returns.
var errStepUsed = errors.New("step already used")

// testSQLCASAcrossHandles races the TOTP compare-and-set through two
// handles on one database, 25 goroutines each: two replicas must not both
// accept the same code.
func testSQLCASAcrossHandles(t *testing.T, d nmauth.Dialect, fresh func(*testing.T) sqlDatabase) {
	stores := twoStores(t, d, fresh)
	errs := raceAcross(stores, 25, func(s nmauth.Store) error {
		return s.UpdateUser(context.Background(), "alice", func(u *nmauth.User) error {
			if state.Of(u.State).TOTPLastStep >= 7 {
				return errStepUsed
			}
			runtime.Gosched() // let the other handle's updates run here if they can
			state.Edit(&u.State, func(s *state.User) { s.TOTPLastStep = 7 })
			return nil
		})
	})
	winners := 0
	for i, err := range errs {
		switch {
		case err == nil:
			winners++
		case err != errStepUsed:
			t.Errorf("update %d: %v", i, err)
		}
	}
	if winners != 1 {
		t.Errorf("%d of %d updates accepted step 7, want exactly 1", winners, len(errs))
	}
	if got := state.Of(getUser(t, stores[1], "alice").State).TOTPLastStep; got != 7 {
		t.Errorf("TOTPLastStep = %d, want 7", got)
	}
}

func testSQLCounterAcrossHandles(t *testing.T, d nmauth.Dialect, fresh func(*testing.T) sqlDatabase) {
	stores := twoStores(t, d, fresh)
	errs := raceAcross(stores, 25, func(s nmauth.Store) error {
		return s.UpdateUser(context.Background(), "alice", func(u *nmauth.User) error {
			n := state.Of(u.State).PasswordFailures
			runtime.Gosched()
			state.Edit(&u.State, func(s *state.User) { s.PasswordFailures = n + 1 })
			return nil
		})
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("update %d: %v", i, err)
		}
	}
	if got, want := state.Of(getUser(t, stores[0], "alice").State).PasswordFailures, len(errs); got != want {
		t.Errorf("PasswordFailures = %d, want %d", got, want)
	}
}

// testSQLTimeRange checks that a time the store cannot read back equal is
// refused with nothing written, instead of being stored wrong.
func testSQLTimeRange(t *testing.T, d nmauth.Dialect, fresh func(*testing.T) sqlDatabase) {
	ctx := context.Background()
	s := newSQLStore(t, fresh(t)(t), d)
	if err := s.CreateUser(ctx, sampleUser("alice")); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	bad := []struct {
		name string
		when time.Time
	}{
		{"before 1678", time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"after 2262", time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"Unix epoch", time.Unix(0, 0)},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			u := sampleUser("bob")
			state.Edit(&u.State, func(s *state.User) { s.PasswordBlockedUntil = tc.when })
			if err := s.CreateUser(ctx, u); err == nil {
				t.Error("CreateUser succeeded, want an error")
			}
			if _, err := s.GetUser(ctx, "bob"); !errors.Is(err, nmauth.ErrNotFound) {
				t.Errorf("GetUser after refused create = %v, want ErrNotFound", err)
			}
			err := s.UpdateUser(ctx, "alice", func(u *nmauth.User) error {
				state.Edit(&u.State, func(s *state.User) { s.TOTPBlockedUntil = tc.when })
				state.Edit(&u.State, func(s *state.User) { s.TOTPFailures = 9 })
				return nil
			})
			if err == nil {
				t.Error("UpdateUser succeeded, want an error")
			}
			checkSameUser(t, s, "alice", sampleUser("alice"))
			if err := s.CreateHost(ctx, nmauth.Host{ID: "host-a", CreatedAt: tc.when}); err == nil {
				t.Error("CreateHost succeeded, want an error")
			}
		})
	}
}

// testSQLEmptySecret checks the documented normalisation: an empty sealed
// secret reads back as nil, which is what "TOTP off" means.
func testSQLEmptySecret(t *testing.T, d nmauth.Dialect, fresh func(*testing.T) sqlDatabase) {
	ctx := context.Background()
	s := newSQLStore(t, fresh(t)(t), d)
	u := sampleUser("alice")
	u.TOTPSecret = []byte{}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	if got := getUser(t, s, "alice"); got.TOTPSecret != nil || got.TOTPEnabled() {
		t.Errorf("TOTPSecret = %#v, want nil", got.TOTPSecret)
	}
}

func TestSQLStoreBadInput(t *testing.T) {
	db, err := sql.Open("sqlite", nmauth.SQLiteDSN(filepath.Join(t.TempDir(), "bad.db")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tests := []struct {
		name    string
		db      *sql.DB
		dialect nmauth.Dialect
	}{
		{"nil db", nil, nmauth.DialectSQLite},
		{"unknown dialect", db, nmauth.Dialect("mysql")},
		{"empty dialect", db, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := nmauth.NewSQLStore(context.Background(), tc.db, tc.dialect)
			if err == nil || s != nil {
				t.Fatalf("NewSQLStore = %v, %v; want nil and an error", s, err)
			}
			if !strings.HasPrefix(err.Error(), "nmauth: ") {
				t.Errorf("error %q lacks the nmauth: prefix", err)
			}
		})
	}
	var tables int
	if err := db.QueryRow("SELECT COUNT(*) FROM sqlite_master").Scan(&tables); err != nil || tables != 0 {
		t.Errorf("refused NewSQLStore left %d tables (%v), want 0", tables, err)
	}
}

func TestSQLiteDSN(t *testing.T) {
	tests := []struct{ name, file string }{
		{"plain", "nmauth.db"},
		{"URI characters", "a?b=c&d#e%20f.db"},
		{"space and unicode", "dir with space/zoë.db"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			db := openSQLite(t, path)
			s := newSQLStore(t, db, nmauth.DialectSQLite)
			if err := s.CreateUser(context.Background(), sampleUser("alice")); err != nil {
				t.Fatalf("CreateUser: %v", err)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("database file not at the given path: %v", err)
			}
			checkPragmas(t, db)
		})
	}
}

// checkPragmas checks the settings SQLiteDSN documents, on a pooled
// connection.
func checkPragmas(t *testing.T, db *sql.DB) {
	t.Helper()
	want := map[string]string{
		"journal_mode": "wal",
		"busy_timeout": "5000",
		"foreign_keys": "1",
		"synchronous":  "2", // FULL
	}
	for pragma, value := range want {
		var got string
		if err := db.QueryRow("PRAGMA " + pragma).Scan(&got); err != nil {
			t.Errorf("PRAGMA %s: %v", pragma, err)
			continue
		}
		if got != value {
			t.Errorf("PRAGMA %s = %q, want %q", pragma, got, value)
		}
	}
}

// sampleUser is a user with a secret, recovery codes and times set.
func sampleUser(name string) nmauth.User {
	return nmauth.User{
		Name:          name,
		PasswordHash:  "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA",
		TOTPSecret:    []byte{0, 1, 2, 0xff},
		RecoveryCodes: []string{"one", "two"},
		CreatedAt:     time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC),
		State:         state.New[nmauth.State](state.User{TOTPLastStep: 3}),
	}
}

func checkSameUser(t *testing.T, s nmauth.Store, name string, want nmauth.User) {
	t.Helper()
	got := getUser(t, s, name)
	if got.Name != want.Name || got.PasswordHash != want.PasswordHash ||
		string(got.TOTPSecret) != string(want.TOTPSecret) || (got.TOTPSecret == nil) != (want.TOTPSecret == nil) ||
		state.Of(got.State).TOTPLastStep != state.Of(want.State).TOTPLastStep || state.Of(got.State).TOTPFailures != state.Of(want.State).TOTPFailures ||
		!slices.Equal(got.RecoveryCodes, want.RecoveryCodes) ||
		!got.CreatedAt.Equal(want.CreatedAt) || state.Of(got.State).Generation != state.Of(want.State).Generation {
		t.Errorf("GetUser(%q) = %+v, want %+v", name, got, want)
	}
}

func getUser(t *testing.T, s nmauth.Store, name string) nmauth.User {
	t.Helper()
	u, err := s.GetUser(context.Background(), name)
	if err != nil {
		t.Fatalf("GetUser(%q): %v", name, err)
	}
	return u
}

// twoStores returns two stores on two handles of one fresh database that
// holds the user "alice".
func twoStores(t *testing.T, d nmauth.Dialect, fresh func(*testing.T) sqlDatabase) []nmauth.Store {
	t.Helper()
	open := fresh(t)
	a, b := newSQLStore(t, open(t), d), newSQLStore(t, open(t), d)
	if err := a.CreateUser(context.Background(), nmauth.User{Name: "alice"}); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	return []nmauth.Store{a, b}
}

// raceAcross runs perStore calls of fn on each store, all released at
// once, and returns their errors.
func raceAcross(stores []nmauth.Store, perStore int, fn func(nmauth.Store) error) []error {
	errs := make([]error, len(stores)*perStore)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = fn(stores[i%len(stores)])
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

func newSQLStore(t *testing.T, db *sql.DB, d nmauth.Dialect) *nmauth.SQLStore {
	t.Helper()
	s, err := nmauth.NewSQLStore(context.Background(), db, d)
	if err != nil {
		t.Fatalf("NewSQLStore(%s): %v", d, err)
	}
	return s
}

// schemaVersions returns the recorded schema versions in order.
func schemaVersions(t *testing.T, db *sql.DB) []int {
	t.Helper()
	rows, err := db.Query("SELECT version FROM nmauth_schema_version ORDER BY version")
	if err != nil {
		t.Fatalf("reading schema versions: %v", err)
	}
	defer rows.Close()
	var versions []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatalf("reading schema versions: %v", err)
		}
		versions = append(versions, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("reading schema versions: %v", err)
	}
	return versions
}

// checkVersionsConsecutive checks that every migration from 1 up was
// recorded, each once.
func checkVersionsConsecutive(t *testing.T, versions []int) {
	t.Helper()
	if len(versions) == 0 {
		t.Fatal("no schema version recorded")
	}
	for i, v := range versions {
		if v != i+1 {
			t.Fatalf("schema versions = %v, want 1 to %d each once", versions, len(versions))
		}
	}
}

func sqliteDatabase(t *testing.T) sqlDatabase {
	path := filepath.Join(t.TempDir(), "nmauth.db")
	return func(t *testing.T) *sql.DB { return openSQLite(t, path) }
}

func openSQLite(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", nmauth.SQLiteDSN(path))
	if err != nil {
		t.Fatalf("sql.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// postgresDSN returns the server named by NMAUTH_TEST_POSTGRES. Without
// it the PostgreSQL tests skip, except in CI, where a silent skip would
// hide that they never ran.
func postgresDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("NMAUTH_TEST_POSTGRES")
	if dsn != "" {
		return dsn
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("NMAUTH_TEST_POSTGRES is not set in CI")
	}
	t.Skip("PostgreSQL tests need a server: export NMAUTH_TEST_POSTGRES=\"$(bash .ci/postgres)\" and run again")
	return ""
}

// postgresDatabase makes a schema of its own for the test, so runs never
// see each other's tables, and drops it when the test ends.
func postgresDatabase(t *testing.T) sqlDatabase {
	t.Helper()
	cfg := postgresSchema(t)
	return func(t *testing.T) *sql.DB {
		db := stdlib.OpenDB(*cfg.Copy())
		// Two handles at once stay well below the server's default of 100
		// connections.
		db.SetMaxOpenConns(20)
		t.Cleanup(func() { db.Close() })
		return db
	}
}

// postgresSchema makes a schema of its own for the test, dropped when the
// test ends, and returns the configuration of connections that use it.
func postgresSchema(t *testing.T) *pgx.ConnConfig {
	t.Helper()
	cfg, err := pgx.ParseConfig(postgresDSN(t))
	if err != nil {
		t.Fatalf("NMAUTH_TEST_POSTGRES: %v", err)
	}
	admin := stdlib.OpenDB(*cfg)
	schema := "nmauth_test_" + strings.ToLower(rand.Text())
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
	c := cfg.Copy()
	c.RuntimeParams["search_path"] = schema
	return c
}
