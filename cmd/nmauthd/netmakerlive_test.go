package main

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// netmakerSQLite writes a Netmaker-shaped SQLite database (see
// writeNetmaker) and returns its path.
func netmakerSQLite(t *testing.T) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "netmaker.db")
	db, err := sql.Open("sqlite", src)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	writeNetmaker(t, db, func(q string) string { return q })
	return src
}

// TestNetmakerLiveReadOnly: the connection the live mode reads Netmaker's
// database over refuses every write, on SQLite and PostgreSQL, so that no
// path of nmauthd can change Netmaker's tables; and it reads them.
func TestNetmakerLiveReadOnly(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) string{
		"SQLite": netmakerSQLite,
		"PostgreSQL": func(t *testing.T) string {
			src := postgresDSN(t)
			db, err := sql.Open("pgx", src)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			writeNetmaker(t, db, func(q string) string { return strings.Replace(strings.Replace(q, "?", "$1", 1), "?", "$2", 1) })
			return src
		},
	} {
		t.Run(name, func(t *testing.T) {
			r, err := openNetmakerLive(context.Background(), open(t))
			if err != nil {
				t.Fatal(err)
			}
			defer r.close()
			ctx := context.Background()
			if u, found, err := r.user(ctx, "alice"); err != nil || !found || u.Password == "" {
				t.Fatalf("user alice: %+v %v %v", u, found, err)
			}
			for _, q := range []string{
				"INSERT INTO users (key, value) VALUES ('mallory', '{}')",
				"UPDATE users SET value = '{}'",
				"DELETE FROM hosts",
				"CREATE TABLE nmauth_probe (x TEXT)",
			} {
				if _, err := r.db.ExecContext(ctx, q); err == nil {
					t.Errorf("%s: the live connection wrote", q)
				}
			}
			if _, found, err := r.user(ctx, "mallory"); err != nil || found {
				t.Errorf("mallory: found %v, %v", found, err)
			}
		})
	}
}

// BenchmarkNetmakerLiveUserRead is the cost of one read of a Netmaker
// user that the live mode makes once a second per account: a point read
// of its users table and the decoding of its JSON.
func BenchmarkNetmakerLiveUserRead(b *testing.B) {
	src := filepath.Join(b.TempDir(), "netmaker.db")
	db, err := sql.Open("sqlite", src)
	if err != nil {
		b.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE users (key TEXT NOT NULL UNIQUE PRIMARY KEY, value TEXT)",
		`INSERT INTO users VALUES ('alice', '{"username":"alice","password":"$2a$05$abcdefghijklmnopqrstuuJ7vYVHkVq0aU0Y1s8q4kz2n5yQ9W8m6","platform_role_id":"super-admin","is_mfa_enabled":false}')`,
	} {
		if _, err := db.Exec(q); err != nil {
			b.Fatal(err)
		}
	}
	db.Close()
	r, err := openNetmakerLive(context.Background(), src)
	if err != nil {
		b.Fatal(err)
	}
	defer r.close()
	ctx := context.Background()
	for b.Loop() {
		clear(r.users)
		if _, found, err := r.user(ctx, "alice"); err != nil || !found {
			b.Fatal(err)
		}
	}
}
