package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nmauth/nmauth/internal/sqlcol"
)

// fakeDB is a database of one table, t (k TEXT key, v BIGINT), that runs
// the statements a Table writes for it on SQLite and logs each, with the
// transactions' ends.
type fakeDB struct {
	mu     sync.Mutex
	rows   map[string]any // v by k; a string v is of the wrong type
	misses int
	log    []string
}

func (f *fakeDB) Connect(context.Context) (driver.Conn, error) { return fakeConn{f}, nil }
func (f *fakeDB) Driver() driver.Driver                        { return nil }

func (f *fakeDB) note(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, s)
}

type fakeConn struct{ f *fakeDB }

func (c fakeConn) Prepare(q string) (driver.Stmt, error) { return fakeStmt{c.f, q}, nil }
func (c fakeConn) Close() error                          { return nil }
func (c fakeConn) Begin() (driver.Tx, error)             { return fakeTx{c.f}, nil }

type fakeTx struct{ f *fakeDB }

func (t fakeTx) Commit() error   { t.f.note("COMMIT"); return nil }
func (t fakeTx) Rollback() error { t.f.note("ROLLBACK"); return nil }

type fakeStmt struct {
	f *fakeDB
	q string
}

func (s fakeStmt) Close() error  { return nil }
func (s fakeStmt) NumInput() int { return -1 }

func (s fakeStmt) Exec(args []driver.Value) (driver.Result, error) {
	f := s.f
	f.note(s.q)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case strings.HasPrefix(s.q, "INSERT INTO nmauth_misses "):
		f.misses++
	case strings.HasPrefix(s.q, "INSERT INTO t "):
		if _, ok := f.rows[args[0].(string)]; ok {
			return driver.RowsAffected(0), nil
		}
		f.rows[args[0].(string)] = args[1]
	case strings.HasPrefix(s.q, "UPDATE t SET v = ? WHERE k = ?"):
		f.rows[args[1].(string)] = args[0]
	case strings.HasPrefix(s.q, "DELETE FROM t WHERE k = ?"):
		delete(f.rows, args[0].(string))
	default:
		return nil, fmt.Errorf("fake: unknown statement %q", s.q)
	}
	return driver.RowsAffected(1), nil
}

func (s fakeStmt) Query(args []driver.Value) (driver.Rows, error) {
	f := s.f
	f.note(s.q)
	f.mu.Lock()
	defer f.mu.Unlock()
	var keys []string
	switch s.q {
	case "SELECT k, v FROM t WHERE k = ?":
		if _, ok := f.rows[args[0].(string)]; ok {
			keys = []string{args[0].(string)}
		}
	case "SELECT k, v FROM t WHERE k > ? ORDER BY k LIMIT ?":
		for k := range f.rows {
			if k > args[0].(string) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		keys = keys[:min(len(keys), int(args[1].(int64)))]
	default:
		return nil, fmt.Errorf("fake: unknown query %q", s.q)
	}
	r := &fakeRows{}
	for _, k := range keys {
		r.rows = append(r.rows, []driver.Value{k, f.rows[k]})
	}
	return r, nil
}

type fakeRows struct{ rows [][]driver.Value }

func (r *fakeRows) Columns() []string { return []string{"k", "v"} }
func (r *fakeRows) Close() error      { return nil }

func (r *fakeRows) Next(dest []driver.Value) error {
	if len(r.rows) == 0 {
		return io.EOF
	}
	copy(dest, r.rows[0])
	r.rows = r.rows[1:]
	return nil
}

var (
	errNotFound = errors.New("not found")
	errExists   = errors.New("exists")
	errBroken   = errors.New("broken")
)

// rec is a record of t.
type rec struct {
	K      string
	V      int64
	Broken []string
}

var recs = Table[rec]{
	Name: "t", Noun: "rec", Columns: []string{"k", "v"},
	Bind: func(r rec) ([]any, error) { return []any{r.K, r.V}, nil },
	Scan: func(c []sqlcol.Cell) (rec, error) {
		var d sqlcol.Decoder
		r := rec{K: d.KeyText(c[0]), V: d.Integer("v", c[1])}
		r.Broken = d.Broken
		if len(d.Errs) > 0 {
			return r, fmt.Errorf("%w: %s", errBroken, r.K)
		}
		return r, nil
	},
	Key: func(r rec) string { return r.K },
}

// openFake returns the table t of a SQLite DB over a fakeDB that holds
// rows.
func openFake(t *testing.T, rows map[string]any) (*Table[rec], *fakeDB) {
	t.Helper()
	f := &fakeDB{rows: rows}
	db := sql.OpenDB(f)
	t.Cleanup(func() { db.Close() })
	d := &DB{SQL: db, errs: Errors{NotFound: errNotFound, Exists: errExists, Broken: errBroken},
		writes: make(chan struct{}, 1)}
	d.missWrite = "INSERT INTO nmauth_misses (slot) VALUES (?)"
	return recs.On(d), f
}

// logged returns the statements f ran since the last call.
func (f *fakeDB) logged() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.log
	f.log = nil
	return l
}
