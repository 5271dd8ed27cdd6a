package tests_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/sso"
)

// backend is a Store to test and, for a SQL store, its database and a
// function that opens another Store over it, as another replica does.
type backend struct {
	store sso.Store
	db    *sql.DB
	again func() sso.Store
}

// stores returns every Store to test: memory, SQLite, and PostgreSQL, in a
// schema of the test's own, when NMAUTH_TEST_POSTGRES names a database.
func stores(t *testing.T) map[string]backend {
	ctx := context.Background()
	out := map[string]backend{"memory": {store: sso.NewMemoryStore()}}
	sqlBackend := func(db *sql.DB, d nmauth.Dialect) backend {
		open := func() sso.Store {
			s, err := sso.NewSQLStore(ctx, db, d)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		return backend{store: open(), db: db, again: open}
	}
	db, err := sql.Open("sqlite", nmauth.SQLiteDSN(filepath.Join(t.TempDir(), "sso.db")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	out["sqlite"] = sqlBackend(db, nmauth.DialectSQLite)
	if pg := postgresSchema(t); pg != nil {
		out["postgres"] = sqlBackend(pg, nmauth.DialectPostgres)
	}
	return out
}

// postgresSchema opens the server NMAUTH_TEST_POSTGRES names in a schema
// of the test's own, dropped when the test ends; nil without the
// variable.
func postgresSchema(t *testing.T) *sql.DB {
	dsn := os.Getenv("NMAUTH_TEST_POSTGRES")
	if dsn == "" {
		return nil
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("NMAUTH_TEST_POSTGRES: %v", err)
	}
	admin := stdlib.OpenDB(*cfg)
	schema := "sso_test_" + strings.ToLower(rand.Text())
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		admin.Close()
		t.Fatalf("creating schema: %v", err)
	}
	cfg.RuntimeParams["search_path"] = schema
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(10)
	t.Cleanup(func() {
		db.Close()
		if _, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
		admin.Close()
	})
	return db
}

// TestStores: a state is taken once, and not once expired; a result the
// same; a link moves when made again.
func TestStores(t *testing.T) {
	ctx := context.Background()
	for name, b := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s, now := b.store, time.Now()
			p := sso.Pending{Nonce: "n", Verifier: "v", Binding: "b", Expires: now.Add(time.Minute)}
			if err := s.PutState(ctx, "s1", p, sso.Room{Total: 100}); err != nil {
				t.Fatal(err)
			}
			got, err := s.TakeState(ctx, "s1", now)
			if err != nil || got.Nonce != "n" || got.Verifier != "v" || got.Binding != "b" || got.Headless {
				t.Fatalf("TakeState = %+v, %v", got, err)
			}
			if _, err := s.TakeState(ctx, "s1", now); !errors.Is(err, nmauth.ErrNotFound) {
				t.Fatalf("a state taken twice: %v", err)
			}
			s.PutState(ctx, "s2", sso.Pending{Headless: true, Expires: now.Add(time.Second)}, sso.Room{Total: 100})
			if _, err := s.TakeState(ctx, "s2", now.Add(2*time.Second)); !errors.Is(err, nmauth.ErrNotFound) {
				t.Fatalf("an expired state: %v", err)
			}
			if _, err := s.TakeResult(ctx, "s3", now); !errors.Is(err, nmauth.ErrNotFound) {
				t.Fatalf("a result not there yet: %v", err)
			}
			s.PutResult(ctx, "s3", "JWT: x", now.Add(time.Minute))
			if r, err := s.TakeResult(ctx, "s3", now); r != "JWT: x" || err != nil {
				t.Fatalf("TakeResult = %q, %v", r, err)
			}
			if _, err := s.TakeResult(ctx, "s3", now); !errors.Is(err, nmauth.ErrNotFound) {
				t.Fatalf("a result taken twice: %v", err)
			}
			if _, err := s.Link(ctx, "iss", "sub"); !errors.Is(err, nmauth.ErrNotFound) {
				t.Fatalf("no link yet: %v", err)
			}
			s.AddLink(ctx, "iss", "sub", "alice")
			s.AddLink(ctx, "iss", "sub", "bob")
			if u, err := s.Link(ctx, "iss", "sub"); u != "bob" || err != nil {
				t.Fatalf("Link = %q, %v; want the latest", u, err)
			}
		})
	}
}

// TestStoresBounded fills the room of pending logins: the put past it is
// ErrPendingFull and stores nothing, a state taken or expired makes room,
// and 40 puts at once through two Stores over one database, as two
// replicas make them, store exactly the room.
func TestStoresBounded(t *testing.T) {
	ctx := context.Background()
	for name, b := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s, now := b.store, time.Now()
			put := func(state string, expires time.Time) error {
				return s.PutState(ctx, state, sso.Pending{Nonce: "n", Expires: expires}, sso.Room{Total: 3})
			}
			for _, state := range []string{"s1", "s2"} {
				if err := put(state, now.Add(time.Minute)); err != nil {
					t.Fatal(err)
				}
			}
			if err := put("old", now.Add(-time.Second)); err != nil {
				t.Fatal(err)
			}
			if err := put("s3", now.Add(time.Minute)); err != nil {
				t.Fatalf("a put beside an expired state: %v", err)
			}
			if err := put("s4", now.Add(time.Minute)); !errors.Is(err, sso.ErrPendingFull) {
				t.Fatalf("a put past the room: %v, want ErrPendingFull", err)
			}
			if _, err := s.TakeState(ctx, "s4", now); !errors.Is(err, nmauth.ErrNotFound) {
				t.Errorf("a refused put stored its state: %v", err)
			}
			if _, err := s.TakeState(ctx, "s1", now); err != nil {
				t.Fatal(err)
			}
			if err := put("s5", now.Add(time.Minute)); err != nil {
				t.Errorf("a put after a take made room: %v", err)
			}

			if b.again == nil {
				return
			}
			replicas := []sso.Store{b.store, b.again()}
			if _, err := b.db.Exec("DELETE FROM nmauth_sso_states"); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			errs := make(chan error, 40)
			for i := range 40 {
				wg.Go(func() {
					errs <- replicas[i%2].PutState(ctx, fmt.Sprint("r", i), sso.Pending{Expires: now.Add(time.Minute)}, sso.Room{Total: 5})
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil && !errors.Is(err, sso.ErrPendingFull) {
					t.Errorf("PutState: %v", err)
				}
			}
			if n := countStates(t, b.db); n != 5 {
				t.Errorf("%d states stored by 40 puts at once under a room of 5", n)
			}
		})
	}
}

// TestStoresShared: a client group's share of the pending logins, on
// every Store, with a room of 100 and a share of 5: a group alone puts 5
// and its 6th is ErrGroupShare and stores nothing; another group still
// puts; as the table fills, a group that holds one gets no more, while a
// group that holds none puts until all 100 are taken. Then a group that
// holds none takes the place of the oldest state of the group that holds
// the most, until every group holds one: then it gets ErrPendingFull.
// 40 puts at once of one group, through two Stores over one database as
// two replicas make them, store exactly its 5.
func TestStoresShared(t *testing.T) {
	ctx := context.Background()
	room := sso.Room{Total: 100, Group: 5}
	for name, b := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s, exp := b.store, time.Now().Add(time.Minute)
			var seq time.Duration // each put expires after the one before
			put := func(state, group string) error {
				seq += time.Millisecond
				return s.PutState(ctx, state, sso.Pending{Nonce: "n", Group: group, Expires: exp.Add(seq)}, room)
			}
			for i := range 5 {
				if err := put(fmt.Sprint("a", i), "10.0.0.0/24"); err != nil {
					t.Fatalf("put %d of a group alone: %v", i+1, err)
				}
			}
			if err := put("a5", "10.0.0.0/24"); !errors.Is(err, sso.ErrGroupShare) {
				t.Fatalf("a put past the group's share: %v, want ErrGroupShare", err)
			}
			if _, err := s.TakeState(ctx, "a5", time.Now()); !errors.Is(err, nmauth.ErrNotFound) {
				t.Errorf("a refused put stored its state: %v", err)
			}
			if err := put("b0", "10.0.1.0/24"); err != nil {
				t.Fatalf("a put of another group: %v", err)
			}
			for i := range 90 {
				if err := put(fmt.Sprint("c", i), fmt.Sprintf("10.1.%d.0/24", i)); err != nil {
					t.Fatalf("a put of a group that holds none, %d taken: %v", 6+i, err)
				}
			}
			if err := put("b1", "10.0.1.0/24"); !errors.Is(err, sso.ErrGroupShare) {
				t.Errorf("a put of a group that holds one, 96 of 100 taken: %v, want ErrGroupShare", err)
			}
			for i := range 4 {
				if err := put(fmt.Sprint("d", i), fmt.Sprintf("10.2.%d.0/24", i)); err != nil {
					t.Fatalf("a put of a group that holds none, %d taken: %v", 96+i, err)
				}
			}
			for i := range 4 {
				if err := put(fmt.Sprint("e", i), fmt.Sprintf("10.3.%d.0/24", i)); err != nil {
					t.Fatalf("a put of a group that holds none, all 100 taken, a group holding %d: %v", 5-i, err)
				}
				if _, err := s.TakeState(ctx, fmt.Sprint("a", i), time.Now()); !errors.Is(err, nmauth.ErrNotFound) {
					t.Fatalf("the oldest state of the largest group, after a push: %v, want it gone", err)
				}
			}
			if err := put("f", "10.4.0.0/24"); !errors.Is(err, sso.ErrPendingFull) {
				t.Errorf("a put with all 100 taken, one by each group: %v, want ErrPendingFull", err)
			}
			if got, err := s.TakeState(ctx, "a4", time.Now()); err != nil || got.Group != "10.0.0.0/24" {
				t.Fatalf("TakeState = %+v, %v; want the group kept", got, err)
			}

			if b.again == nil {
				return
			}
			replicas := []sso.Store{b.store, b.again()}
			if _, err := b.db.Exec("DELETE FROM nmauth_sso_states"); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			errs := make(chan error, 40)
			for i := range 40 {
				wg.Go(func() {
					errs <- replicas[i%2].PutState(ctx, fmt.Sprint("r", i), sso.Pending{Group: "10.9.0.0/24", Expires: exp}, room)
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil && !errors.Is(err, sso.ErrGroupShare) {
					t.Errorf("PutState: %v", err)
				}
			}
			if n := countStates(t, b.db); n != 5 {
				t.Errorf("%d states stored by 40 puts of one group at once under a share of 5", n)
			}
		})
	}
}

func countStates(t *testing.T, db *sql.DB) int {
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM nmauth_sso_states").Scan(&n); err != nil {
		t.Error(err)
	}
	return n
}

// TestStateIndexes opens a database whose tables were made before the
// pending logins were bounded: the store adds the indexes on expiry and
// the column of the client group with its index, and its put finds
// expired states and results, and counts live states in all and of a
// group, through them rather than by reading the tables.
func TestStateIndexes(t *testing.T) {
	db, err := sql.Open("sqlite", nmauth.SQLiteDSN(filepath.Join(t.TempDir(), "sso.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{
		`CREATE TABLE nmauth_sso_states (state TEXT NOT NULL PRIMARY KEY, nonce TEXT NOT NULL, verifier TEXT NOT NULL, binding TEXT NOT NULL, headless BOOLEAN NOT NULL, expires BIGINT NOT NULL)`,
		`CREATE TABLE nmauth_sso_results (state TEXT NOT NULL PRIMARY KEY, result TEXT NOT NULL, expires BIGINT NOT NULL)`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sso.NewSQLStore(context.Background(), db, nmauth.DialectSQLite); err != nil {
		t.Fatal(err)
	}
	for q, index := range map[string]string{
		`DELETE FROM nmauth_sso_states WHERE expires <= 1`:                                                                 "nmauth_sso_states_expires",
		`DELETE FROM nmauth_sso_results WHERE expires <= 1`:                                                                "nmauth_sso_results_expires",
		`SELECT COUNT(*) FROM (SELECT 1 FROM nmauth_sso_states WHERE expires > 1 LIMIT 10) AS live`:                        "nmauth_sso_states_expires",
		`SELECT COUNT(*) FROM (SELECT 1 FROM nmauth_sso_states WHERE client_group = 'g' AND expires > 1 LIMIT 10) AS held`: "nmauth_sso_states_group",
	} {
		rows, err := db.Query("EXPLAIN QUERY PLAN " + q)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if p := strings.Join(plan, "; "); !strings.Contains(p, "INDEX "+index) {
			t.Errorf("%s does not use %s: %s", q, index, p)
		}
	}
}
