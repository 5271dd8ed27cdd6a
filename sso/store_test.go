package sso_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/sso"
)

// stores returns every Store to test: memory, SQLite, and PostgreSQL when
// NMAUTH_TEST_POSTGRES names a database.
func stores(t *testing.T) map[string]sso.Store {
	ctx := context.Background()
	out := map[string]sso.Store{"memory": sso.NewMemoryStore()}
	db, err := sql.Open("sqlite", nmauth.SQLiteDSN(filepath.Join(t.TempDir(), "sso.db")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if out["sqlite"], err = sso.NewSQLStore(ctx, db, nmauth.DialectSQLite); err != nil {
		t.Fatal(err)
	}
	if dsn := os.Getenv("NMAUTH_TEST_POSTGRES"); dsn != "" {
		pg, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pg.Close() })
		for _, table := range []string{"nmauth_sso_states", "nmauth_sso_results", "nmauth_sso_links"} {
			pg.Exec("DROP TABLE IF EXISTS " + table)
		}
		if out["postgres"], err = sso.NewSQLStore(ctx, pg, nmauth.DialectPostgres); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestStores: a state is taken once, and not once expired; a result the
// same; a link moves when made again.
func TestStores(t *testing.T) {
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			now := time.Now()
			p := sso.Pending{Nonce: "n", Verifier: "v", Binding: "b", Expires: now.Add(time.Minute)}
			if err := s.PutState(ctx, "s1", p); err != nil {
				t.Fatal(err)
			}
			got, err := s.TakeState(ctx, "s1", now)
			if err != nil || got.Nonce != "n" || got.Verifier != "v" || got.Binding != "b" || got.Headless {
				t.Fatalf("TakeState = %+v, %v", got, err)
			}
			if _, err := s.TakeState(ctx, "s1", now); !errors.Is(err, nmauth.ErrNotFound) {
				t.Fatalf("a state taken twice: %v", err)
			}
			s.PutState(ctx, "s2", sso.Pending{Headless: true, Expires: now.Add(time.Second)})
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
