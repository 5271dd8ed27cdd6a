package integration

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/nmauth/nmauth"
)

// TestCheckScansInBatches: check and check --repair read a store whose
// whole scan takes several store deadlines, each row read slowed by a
// pause in the driver (as a slow disk or a far database would), and
// finish: the scan finds the broken columns of users, hosts and access
// tokens wherever they lie, the repair resets them, and a second scan
// finds none. A scan under one deadline, as before, is cut by it.
func TestCheckScansInBatches(t *testing.T) {
	const (
		hosts   = 25_000
		timeout = time.Second
	)
	for _, b := range sqlBackends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			// A pause of 1 ms every 10 rows makes a read of the hosts
			// take at least 2.5 s, two and a half store deadlines, and one batch of
			// a thousand at least 100 ms, a tenth of one.
			db := slowDatabase(t, b.dialect, 10, time.Millisecond)
			store := newSQLStore(t, db, b.dialect)
			srv := newServer(t, store, func(c *nmauth.Config) {
				c.StoreTimeout = timeout
				c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			})
			a := srv.auth
			if err := a.Admin().CreateUser(ctx, "bob", "bob's long password"); err != nil {
				t.Fatal(err)
			}
			master := nmauth.Principal{Kind: nmauth.KindMaster}
			token, _, err := a.CreateAccessToken(ctx, master, nmauth.AccessTokenRequest{Name: "ci", UserName: "bob", Networks: []string{"home"}})
			if err != nil {
				t.Fatal(err)
			}
			fillHosts(t, db, b.dialect, hosts)
			for _, q := range []string{
				"UPDATE nmauth_users SET logged_out = 'null' WHERE name = 'bob'",
				"UPDATE nmauth_hosts SET password_failures = -1 WHERE id IN ('host-0000000', 'host-0012500', 'host-0024999')",
				"UPDATE nmauth_access_tokens SET networks = 'null'",
			} {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			want := []string{
				"user bob logged_out",
				"host host-0000000 password_failures",
				"host host-0012500 password_failures",
				"host host-0024999 password_failures",
				"access token " + token.ID + " networks",
			}

			found, err := a.Admin().BrokenRecords(ctx)
			if err != nil {
				t.Fatalf("BrokenRecords: %v", err)
			}
			if got := brokenNames(found); !slices.Equal(got, want) {
				t.Fatalf("BrokenRecords = %q, want %q", got, want)
			}
			repaired, err := a.Admin().RepairRecords(ctx)
			if err != nil {
				t.Fatalf("RepairRecords: %v", err)
			}
			if got := brokenNames(repaired); !slices.Equal(got, want) {
				t.Fatalf("RepairRecords = %q, want %q", got, want)
			}
			if again, err := a.Admin().BrokenRecords(ctx); err != nil || len(again) != 0 {
				t.Fatalf("BrokenRecords after the repair = %q, %v; want none", brokenNames(again), err)
			}
		})
	}
}

// TestBrokenRecordsPages reads a store for broken records in batches of
// every size from one record to more than a table holds: each scan finds
// every broken column once, in order, across the ends of batches and of
// tables.
func TestBrokenRecordsPages(t *testing.T) {
	for _, b := range sqlBackends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			db := b.fresh(t)(t)
			store := newSQLStore(t, db, b.dialect)
			srv := newServer(t, store, func(*nmauth.Config) {})
			a := srv.auth
			master := nmauth.Principal{Kind: nmauth.KindMaster}
			var tokens []string
			for _, name := range []string{"ann", "bob", "cy"} {
				if err := a.Admin().CreateUser(ctx, name, name+"'s long password"); err != nil {
					t.Fatal(err)
				}
				tok, _, err := a.CreateAccessToken(ctx, master, nmauth.AccessTokenRequest{Name: "ci", UserName: name})
				if err != nil {
					t.Fatal(err)
				}
				tokens = append(tokens, tok.ID)
			}
			fillHosts(t, db, b.dialect, 5)
			for _, q := range []string{
				"UPDATE nmauth_users SET totp_failures = -2 WHERE name IN ('ann', 'cy')",
				"UPDATE nmauth_users SET password_clients = 'null' WHERE name = 'cy'",
				"UPDATE nmauth_hosts SET password_clients = '{' WHERE id IN ('host-0000000', 'host-0000004')",
				"UPDATE nmauth_access_tokens SET networks = 'null' WHERE user_name IN ('ann', 'cy')",
			} {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			// Users, then hosts, then access tokens, each in the order of
			// their keys; a record's columns in the order of its table.
			brokenTokens := []string{tokens[0], tokens[2]}
			slices.Sort(brokenTokens)
			want := []string{
				"user ann totp_failures", "user cy totp_failures", "user cy password_clients",
				"host host-0000000 password_clients", "host host-0000004 password_clients",
				"access token " + brokenTokens[0] + " networks", "access token " + brokenTokens[1] + " networks",
			}
			for limit := 1; limit <= 12; limit++ {
				var got []*nmauth.BrokenRecordError
				at := ""
				for batches := 0; ; batches++ {
					if batches > 100 {
						t.Fatalf("limit %d: no end after %d batches", limit, batches)
					}
					found, next, err := store.BrokenRecords(ctx, at, limit)
					if err != nil {
						t.Fatalf("limit %d: BrokenRecords(%q): %v", limit, at, err)
					}
					got = append(got, found...)
					if next == "" {
						break
					}
					at = next
				}
				if !slices.Equal(brokenNames(got), want) {
					t.Errorf("limit %d: found %q, want %q", limit, brokenNames(got), want)
				}
			}
		})
	}
}

// brokenNames writes each broken column as "KIND KEY COLUMN".
func brokenNames(bs []*nmauth.BrokenRecordError) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.Kind + " " + b.Key + " " + b.Column
	}
	return out
}

// fillHosts adds n hosts, host-0000000 on, in one statement.
func fillHosts(t *testing.T, db *sql.DB, d nmauth.Dialect, n int) {
	t.Helper()
	const cols = "INSERT INTO nmauth_hosts (id, mac_address, password_hash, disabled, password_failures, password_blocked_until, password_clients, generation, created_at) "
	q := cols + fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM n WHERE i < %d)
SELECT printf('host-%%07d', i), '', 'x', 0, 0, 0, '[]', i + 1, 1 FROM n`, n-1)
	if d == nmauth.DialectPostgres {
		q = cols + fmt.Sprintf(`SELECT 'host-' || lpad(i::text, 7, '0'), '', 'x', false, 0, 0, '[]', i + 1, 1 FROM generate_series(0, %d) i`, n-1)
	}
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("adding %d hosts: %v", n, err)
	}
}

// slowDatabase opens a fresh database of dialect d whose driver pauses
// for pause after every every rows it reads.
func slowDatabase(t *testing.T, d nmauth.Dialect, every int, pause time.Duration) *sql.DB {
	t.Helper()
	var base driver.Connector
	switch d {
	case nmauth.DialectSQLite:
		path := t.TempDir() + "/nmauth.db"
		plain := openSQLite(t, path)
		base = dsnConnector{plain.Driver(), nmauth.SQLiteDSN(path)}
	case nmauth.DialectPostgres:
		base = stdlib.GetConnector(*postgresSchema(t))
	}
	db := sql.OpenDB(slowConnector{base, every, pause})
	t.Cleanup(func() { db.Close() })
	return db
}

// dsnConnector opens a driver's connections with one name.
type dsnConnector struct {
	d   driver.Driver
	dsn string
}

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }
func (c dsnConnector) Driver() driver.Driver                        { return c.d }

// slowConnector's connections pause after every every rows they read.
type slowConnector struct {
	base  driver.Connector
	every int
	pause time.Duration
}

func (c slowConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &slowConn{conn, c}, nil
}

func (c slowConnector) Driver() driver.Driver { return c.base.Driver() }

// slowConn passes everything to its connection, and slows the rows of
// its statements. Queries are prepared first, as database/sql does for a
// connection without QueryerContext.
type slowConn struct {
	driver.Conn
	c slowConnector
}

func (c *slowConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *slowConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &slowStmt{st, c.c}, nil
}

func (c *slowConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *slowConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

// CheckNamedValue lets the driver convert arguments its own way.
func (c *slowConn) CheckNamedValue(v *driver.NamedValue) error {
	if ch, ok := c.Conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(v)
	}
	return driver.ErrSkip
}

type slowStmt struct {
	driver.Stmt
	c slowConnector
}

func (s *slowStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s *slowStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	return &slowRows{Rows: rows, c: s.c}, nil
}

type slowRows struct {
	driver.Rows
	c    slowConnector
	read int
}

func (r *slowRows) Next(dest []driver.Value) error {
	if err := r.Rows.Next(dest); err != nil {
		return err
	}
	if r.read++; r.read%r.c.every == 0 {
		time.Sleep(r.c.pause)
	}
	return nil
}
