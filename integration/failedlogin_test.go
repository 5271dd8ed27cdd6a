package integration

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/nmauth/nmauth"
)

// TestFailedLoginWrites counts the rows a failed login writes, in every
// table of the store, on SQLite and PostgreSQL: a wrong password of a
// user who exists and any password of a name nobody holds write and
// commit alike, so that the time of the answer tells nothing of the name.
func TestFailedLoginWrites(t *testing.T) {
	for _, b := range sqlBackends {
		t.Run(b.name, func(t *testing.T) {
			if b.dialect == nmauth.DialectPostgres {
				postgresDSN(t)
			}
			ctx := context.Background()
			db := b.fresh(t)(t)
			srv := newServer(t, newSQLStore(t, db, b.dialect), func(*nmauth.Config) {})
			createAccounts(t, srv.auth)
			writes := countWrites(t, db, b.dialect)
			for i := range 3 {
				before := writes()
				if _, err := srv.auth.LoginUser(ctx, "alice", "a wrong password"); !errors.Is(err, nmauth.ErrInvalidCredentials) {
					t.Fatalf("wrong password: %v", err)
				}
				known := writes() - before
				before = writes()
				if _, err := srv.auth.LoginUser(ctx, fmt.Sprintf("nobody-%d", i), "a wrong password"); !errors.Is(err, nmauth.ErrInvalidCredentials) {
					t.Fatalf("unknown name: %v", err)
				}
				unknown := writes() - before
				if known != unknown || known == 0 {
					t.Fatalf("a wrong password of alice wrote %d rows, one of an unknown name %d; want the same, and the attempt counted", known, unknown)
				}
			}
		})
	}
}

// TestFailedMachineLoginWrites: a host login with a machine secret writes
// alike for a host that exists and a wrong secret and for an id nobody
// holds, on SQLite and PostgreSQL.
func TestFailedMachineLoginWrites(t *testing.T) {
	for _, b := range sqlBackends {
		t.Run(b.name, func(t *testing.T) {
			if b.dialect == nmauth.DialectPostgres {
				postgresDSN(t)
			}
			ctx := context.Background()
			db := b.fresh(t)(t)
			srv := newServer(t, newSQLStore(t, db, b.dialect), func(*nmauth.Config) {})
			const known = "3f2b8c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b"
			if err := srv.auth.Admin().CreateHost(ctx, known, "", crand.Text()); err != nil {
				t.Fatal(err)
			}
			writes := countWrites(t, db, b.dialect)
			for i := range 3 {
				before := writes()
				if _, err := srv.auth.LoginHost(ctx, known, "", crand.Text()); !errors.Is(err, nmauth.ErrInvalidCredentials) {
					t.Fatalf("wrong machine secret: %v", err)
				}
				wrong := writes() - before
				before = writes()
				nobody := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
				if _, err := srv.auth.LoginHost(ctx, nobody, "", crand.Text()); !errors.Is(err, nmauth.ErrUnknownHost) {
					t.Fatalf("unknown host: %v", err)
				}
				unknown := writes() - before
				if wrong != unknown || wrong == 0 {
					t.Fatalf("a wrong machine secret of a host wrote %d rows, one of an unknown id %d; want the same, and the attempt counted", wrong, unknown)
				}
			}
		})
	}
}

// countWrites puts a trigger on every table of the store that counts the
// rows inserted, updated or deleted, and returns a reader of the count.
func countWrites(t *testing.T, db *sql.DB, d nmauth.Dialect) func() int64 {
	t.Helper()
	list := "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'nmauth_%'"
	if d == nmauth.DialectPostgres {
		list = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name LIKE 'nmauth_%'"
	}
	rows, err := db.Query(list)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	rows.Close()
	stmts := []string{"CREATE TABLE test_writes (n BIGINT NOT NULL)", "INSERT INTO test_writes (n) VALUES (0)"}
	if d == nmauth.DialectPostgres {
		stmts = append(stmts, `CREATE FUNCTION test_count_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN UPDATE test_writes SET n = n + 1; RETURN NULL; END $$`)
	}
	for _, table := range tables {
		if d == nmauth.DialectPostgres {
			stmts = append(stmts, "CREATE TRIGGER test_count_"+table+" AFTER INSERT OR UPDATE OR DELETE ON "+table+
				" FOR EACH ROW EXECUTE FUNCTION test_count_write()")
			continue
		}
		for _, op := range []string{"INSERT", "UPDATE", "DELETE"} {
			stmts = append(stmts, "CREATE TRIGGER test_count_"+table+"_"+op+" AFTER "+op+" ON "+table+
				" BEGIN UPDATE test_writes SET n = n + 1; END")
		}
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return func() int64 {
		var n int64
		if err := db.QueryRow("SELECT n FROM test_writes").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
}
