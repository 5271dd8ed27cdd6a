package sqlmigrate

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeDB is a database that keeps a version table and logs every
// statement it runs, with their arguments.
type fakeDB struct {
	mu       sync.Mutex
	versions []int64
	log      []string
	args     [][]driver.Value
}

var errFailed = errors.New("statement failed")

func (f *fakeDB) Open(string) (driver.Conn, error) { return fakeConn{f}, nil }

type fakeConn struct{ f *fakeDB }

func (c fakeConn) Prepare(q string) (driver.Stmt, error) { return fakeStmt{c.f, q}, nil }
func (c fakeConn) Close() error                          { return nil }
func (c fakeConn) Begin() (driver.Tx, error)             { return fakeTx{}, nil }

type fakeTx struct{}

func (fakeTx) Commit() error   { return nil }
func (fakeTx) Rollback() error { return nil }

type fakeStmt struct {
	f *fakeDB
	q string
}

func (s fakeStmt) Close() error  { return nil }
func (s fakeStmt) NumInput() int { return -1 }

func (s fakeStmt) Exec(args []driver.Value) (driver.Result, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.log = append(s.f.log, s.q)
	s.f.args = append(s.f.args, args)
	switch {
	case strings.Contains(s.q, "FAIL"):
		return nil, errFailed
	case strings.HasPrefix(s.q, "INSERT INTO v "):
		s.f.versions = append(s.f.versions, args[0].(int64))
	}
	return driver.RowsAffected(1), nil
}

func (s fakeStmt) Query([]driver.Value) (driver.Rows, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.log = append(s.f.log, s.q)
	if s.q != "SELECT COALESCE(MAX(version), 0) FROM v" {
		return nil, errFailed
	}
	var top int64
	for _, v := range s.f.versions {
		top = max(top, v)
	}
	return &fakeRows{v: top}, nil
}

type fakeRows struct {
	v    int64
	done bool
}

func (r *fakeRows) Columns() []string { return []string{"version"} }
func (r *fakeRows) Close() error      { return nil }

func (r *fakeRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	dest[0] = r.v
	return nil
}

// open returns a database over a new fakeDB.
func open(t *testing.T) (*sql.DB, *fakeDB) {
	t.Helper()
	f := &fakeDB{}
	db := sql.OpenDB(connector{f})
	t.Cleanup(func() { db.Close() })
	return db, f
}

type connector struct{ f *fakeDB }

func (c connector) Connect(context.Context) (driver.Conn, error) { return fakeConn{c.f}, nil }
func (c connector) Driver() driver.Driver                        { return c.f }

// migrate runs every step of s, each in a transaction of its own.
func migrate(t *testing.T, db *sql.DB, s Schema) error {
	t.Helper()
	ctx := context.Background()
	for v := 1; v <= len(s.Versions); v++ {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Step(ctx, tx, v); err != nil {
			_ = tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	return nil
}

func numbered(q string) string { return strings.ReplaceAll(q, "?", "$1") }

var schema = Schema{Table: "v", Rebind: numbered, Versions: [][]string{{"CREATE TABLE a"}, {"CREATE TABLE b", "CREATE INDEX b1"}}}

// TestStep applies each version once, in order, and records it; a second
// start applies none.
func TestStep(t *testing.T) {
	db, f := open(t)
	if err := migrate(t, db, schema); err != nil {
		t.Fatal(err)
	}
	var applied []string
	for _, q := range f.log {
		if strings.HasPrefix(q, "CREATE TABLE a") || strings.HasPrefix(q, "CREATE TABLE b") || strings.HasPrefix(q, "CREATE INDEX") {
			applied = append(applied, q)
		}
	}
	if !slices.Equal(applied, []string{"CREATE TABLE a", "CREATE TABLE b", "CREATE INDEX b1"}) || !slices.Equal(f.versions, []int64{1, 2}) {
		t.Fatalf("applied %q, recorded %v", applied, f.versions)
	}
	if !slices.Contains(f.log, "INSERT INTO v (version) VALUES ($1)") {
		t.Errorf("the version was not recorded with the database's placeholders: %q", f.log)
	}
	n := len(f.log)
	if err := migrate(t, db, schema); err != nil {
		t.Fatal(err)
	}
	for _, q := range f.log[n:] {
		if !strings.HasPrefix(q, "CREATE TABLE IF NOT EXISTS v") && !strings.HasPrefix(q, "SELECT COALESCE") {
			t.Errorf("a second start ran %q", q)
		}
	}
}

// TestStepLock takes the advisory lock before it reads the version.
func TestStepLock(t *testing.T) {
	db, f := open(t)
	s := schema
	s.Lock = 42
	if err := migrate(t, db, s); err != nil {
		t.Fatal(err)
	}
	if f.log[0] != "SELECT pg_advisory_xact_lock($1)" || f.args[0][0] != int64(42) {
		t.Fatalf("first statement %q %v, want the lock", f.log[0], f.args[0])
	}
}

// TestStepNewer refuses a database newer than the schema.
func TestStepNewer(t *testing.T) {
	db, f := open(t)
	f.versions = []int64{1, 5}
	var newer *NewerError
	if err := migrate(t, db, schema); !errors.As(err, &newer) || newer.Have != 5 || newer.Know != 2 {
		t.Fatalf("error %v, want a *NewerError of 5 and 2", err)
	}
	if len(f.versions) != 2 {
		t.Errorf("versions %v recorded on a newer database", f.versions)
	}
}

// TestStepFailure names the version whose statement failed, keeps the
// driver's error, and records nothing of it.
func TestStepFailure(t *testing.T) {
	db, f := open(t)
	s := schema
	s.Versions = [][]string{{"CREATE TABLE a"}, {"FAIL"}}
	err := migrate(t, db, s)
	if !errors.Is(err, errFailed) || !strings.HasPrefix(err.Error(), "migrate to version 2: ") {
		t.Fatalf("error %v", err)
	}
	if !slices.Equal(f.versions, []int64{1}) {
		t.Errorf("recorded %v", f.versions)
	}
}
