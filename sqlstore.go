// This file holds the SQLStore itself: the dialects it serves, opening a
// database (NewSQLStore, SQLiteDSN), and what every table's methods share:
// the transactions, the queue of SQLite writes, the count of misses, and
// the wrapping of errors. The schema is in sqlschema.go, the users in
// sqlusers.go, the hosts in sqlhosts.go, the root-secret checks in
// sqlkeys.go, and the columns' encoding in sqlrow.go.

package nmauth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/nmauth/nmauth/internal/sqlcol"
	"github.com/nmauth/nmauth/internal/sqlmigrate"
	"github.com/nmauth/nmauth/internal/sqlstmt"
)

// Dialect names the SQL database behind a [SQLStore].
type Dialect string

const (
	// DialectSQLite is SQLite through modernc.org/sqlite, driver name
	// "sqlite". Open the database with [SQLiteDSN].
	DialectSQLite Dialect = "sqlite"
	// DialectPostgres is PostgreSQL through github.com/jackc/pgx/v5/stdlib,
	// driver name "pgx".
	DialectPostgres Dialect = "postgres"
)

// SQLStore is a [Store] kept in a SQL database through database/sql: SQLite
// for a single process with an embedded file, PostgreSQL for several
// replicas sharing one database.
//
// The library imports neither driver, so an application links only the one
// it uses, with a blank import:
//
//	import _ "modernc.org/sqlite"             // DialectSQLite, driver "sqlite"
//	import _ "github.com/jackc/pgx/v5/stdlib" // DialectPostgres, driver "pgx"
//
// SQLite callers should open the database with [SQLiteDSN]. Its
// _txlock=immediate makes every transaction take the write lock at BEGIN,
// which is what lets UpdateUser and UpdateHost read and write a record
// atomically across processes; its busy timeout makes a writer wait for
// another process instead of failing. Within one process the store queues
// its own SQLite writes, so the pool size of the *sql.DB does not matter.
// In-memory SQLite databases give each pooled connection its own database
// and are not supported.
//
// On PostgreSQL, UpdateUser and UpdateHost lock the row with SELECT ... FOR
// UPDATE in a READ COMMITTED transaction, so concurrent updates of one
// record from any number of replicas wait for each other and never fail
// with a serialization error.
//
// The update callback runs inside the transaction, which holds a pooled
// connection and the lock, so it must not call the store itself.
//
// Times are stored as Unix nanoseconds, 0 for the zero time; a non-zero
// time must therefore lie between the years 1678 and 2262 and not be the
// Unix epoch itself. An empty TOTPSecret is stored as NULL and reads back
// as nil.
type SQLStore struct {
	db      *sql.DB
	dialect Dialect
	q       sqlQueries
	txOpts  *sql.TxOptions
	// writes holds one token per writer allowed at a time. SQLite admits a
	// single writer per database; queuing writers here rather than in
	// SQLite's busy handler keeps waits fair and cancellable.
	writes chan struct{}
	// getUser and getHost are the reads of every login, prepared once
	// (on each connection, as database/sql does) rather than parsed again
	// by every call. They live as long as db.
	getUser, getHost *sql.Stmt
	// lockHostStmt and updateHostStmt are the statements of a batch of
	// host updates, prepared as getHost is.
	lockHostStmt, updateHostStmt *sql.Stmt
	// getHostLogin is GetHostLogin's statement, prepared as getHost is.
	getHostLogin *sql.Stmt
}

var (
	_ Store          = (*SQLStore)(nil)
	_ KeyCheckStore  = (*SQLStore)(nil)
	_ HostBatchStore = (*SQLStore)(nil)
	_ HostLoginStore = (*SQLStore)(nil)
)

var (
	errSQLNilDB   = errors.New("nmauth: sql store: nil database")
	errSQLDialect = errors.New("nmauth: sql store: unknown dialect")
)

// NewSQLStore returns a [SQLStore] over db, creating the tables or bringing
// them up to date first. Each migration runs in its own transaction and is
// recorded in the nmauth_schema_version table, so several processes may
// start at once on one database: on PostgreSQL an advisory lock, on SQLite
// the write lock, lets exactly one of them apply each migration. On SQLite
// a first connection refused as busy, as while another process turns a new
// file to WAL, is tried again for up to 5 s or until ctx ends. A database
// whose schema is newer than this library is refused.
func NewSQLStore(ctx context.Context, db *sql.DB, d Dialect) (*SQLStore, error) {
	if db == nil {
		return nil, errSQLNilDB
	}
	s := &SQLStore{db: db, dialect: d, q: newSQLQueries(d)}
	switch d {
	case DialectSQLite:
		s.writes = make(chan struct{}, 1)
		if err := sqlmigrate.ConnectSQLite(ctx, db, sqliteOpenWait); err != nil {
			return nil, wrapSQL("open", err)
		}
	case DialectPostgres:
		// Stated explicitly so that a server default of SERIALIZABLE or
		// REPEATABLE READ cannot turn row-lock waits into failures.
		s.txOpts = &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	default:
		return nil, fmt.Errorf("%w %q", errSQLDialect, d)
	}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	var err error
	if s.getUser, err = db.PrepareContext(ctx, s.q.getUser); err != nil {
		return nil, wrapSQL("prepare get user", err)
	}
	if s.getHost, err = db.PrepareContext(ctx, s.q.getHost); err != nil {
		return nil, wrapSQL("prepare get host", err)
	}
	if s.getHostLogin, err = db.PrepareContext(ctx, hostLoginSQL(s.q)); err != nil {
		return nil, wrapSQL("prepare get host login", err)
	}
	if s.lockHostStmt, err = db.PrepareContext(ctx, s.q.lockHost); err != nil {
		return nil, wrapSQL("prepare lock host", err)
	}
	if s.updateHostStmt, err = db.PrepareContext(ctx, s.q.updateHost); err != nil {
		return nil, wrapSQL("prepare update host", err)
	}
	return s, nil
}

// SQLiteDSN returns the modernc.org/sqlite data source name for the
// database file at path with the settings a [SQLStore] relies on: WAL so
// that readers never block the writer, a 5 s busy timeout so that a writer
// waits for another process instead of failing, foreign keys on,
// synchronous=FULL so that a committed TOTP step survives a power loss and
// a code cannot be replayed after it, and _txlock=immediate so that each
// transaction takes the write lock at BEGIN.
func SQLiteDSN(path string) string {
	return sqlstmt.SQLiteURI(path) + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)" +
		"&_pragma=foreign_keys(1)&_pragma=synchronous(FULL)&_txlock=immediate"
}

// sqliteOpenWait is how long NewSQLStore tries again to open a SQLite
// connection that SQLite refused as busy: the busy timeout of SQLiteDSN.
const sqliteOpenWait = 5 * time.Second

// listPage runs a page query, whose arguments are after and limit, and
// scans its rows.
func listPage[T any](ctx context.Context, db *sql.DB, what, query, after string, limit int, scan func(sqlcol.RowScanner) (T, error)) ([]T, error) {
	if limit <= 0 {
		return []T{}, ctx.Err()
	}
	rows, err := db.QueryContext(ctx, query, after, limit)
	if err != nil {
		return nil, wrapSQL(what, err)
	}
	defer rows.Close()
	out := make([]T, 0, min(limit, 1024))
	for rows.Next() {
		v, err := scan(rows)
		if err != nil && !errors.Is(err, ErrBrokenRecord) {
			return nil, wrapSQL(what, err)
		}
		// A broken record is listed, marked, in its place.
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, wrapSQL(what, err)
	}
	return out, nil
}

// insert runs an INSERT ... ON CONFLICT DO NOTHING and reports a row that
// was not inserted as ErrExists. Letting the database decide keeps two
// concurrent creates of one key correct without reading driver error codes.
func (s *SQLStore) insert(ctx context.Context, what, query string, args []any) error {
	return s.inTx(ctx, what, func(tx *sql.Tx) error { return insertIn(ctx, tx, what, query, args) })
}

// insertIn runs an insert of sqlstmt.Insert in tx: ErrExists when its key is
// taken.
func insertIn(ctx context.Context, tx *sql.Tx, what, query string, args []any) error {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return wrapSQL(what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return wrapSQL(what, err)
	}
	if n == 0 {
		return ErrExists
	}
	return nil
}

// inTx runs fn in a transaction and commits it if fn returns nil. fn's
// error is returned as it is, so that errors from an update callback reach
// the caller unchanged.
func (s *SQLStore) inTx(ctx context.Context, what string, fn func(*sql.Tx) error) error {
	release, err := s.acquireWrite(ctx)
	if err != nil {
		return wrapSQL(what, err)
	}
	defer release()
	tx, err := s.db.BeginTx(ctx, s.txOpts)
	if err != nil {
		return wrapSQL(what, err)
	}
	if err := fn(tx); errors.Is(err, errMissWritten) {
		// An update of a missing record commits its write of the misses.
		if err := tx.Commit(); err != nil {
			return wrapSQL(what, err)
		}
		return ErrNotFound
	} else if err != nil {
		// The transaction is abandoned either way; fn's error is the one
		// the caller needs.
		_ = tx.Rollback()
		return err
	}
	return wrapSQL(what, tx.Commit())
}

// errMissWritten tells inTx that an update found no record and wrote the
// misses instead: it commits, and the caller gets ErrNotFound.
var errMissWritten = errors.New("nmauth: sql store: missing record, miss written")

// missSlots is how many rows nmauth_misses holds at most: the misses of
// different keys take different rows, so that on PostgreSQL a flood of
// unknown names does not queue on one row lock.
const missSlots = 64

// missWrite counts an update of the missing key in nmauth_misses, in the
// transaction that looked for it, and returns errMissWritten. So an update
// of a missing record writes and commits one row as an update of one that
// exists does: a failed login of an unknown name costs the Store what a
// wrong password of a known one costs, and its time tells nothing of
// whether the name is held.
func (s *SQLStore) missWrite(ctx context.Context, tx *sql.Tx, key string) error {
	h := fnv.New32a()
	h.Write([]byte(key))
	slot := int64(h.Sum32() % missSlots)
	if _, err := tx.ExecContext(ctx, s.q.missWrite, slot); err != nil {
		return wrapSQL("count a miss", err)
	}
	return errMissWritten
}

// acquireWrite waits for this store's turn to write, or for ctx to end.
func (s *SQLStore) acquireWrite(ctx context.Context) (release func(), err error) {
	if s.writes == nil {
		return func() {}, ctx.Err()
	}
	select {
	case s.writes <- struct{}{}:
		return func() { <-s.writes }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// wrapSQL prefixes an unexpected error with the operation that failed; it
// returns nil for nil.
func wrapSQL(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("nmauth: sql store: %s: %w", what, err)
}

// readErr maps a missing row to ErrNotFound; a broken record's error is
// returned as it is, since it names the record and the column.
func readErr(what string, err error) error {
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return ErrNotFound
	case errors.Is(err, ErrBrokenRecord):
		return err
	}
	return wrapSQL(what, err)
}
