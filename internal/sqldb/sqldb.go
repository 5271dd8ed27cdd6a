// Package sqldb runs the statements of nmauth's SQL store over
// database/sql, for SQLite and PostgreSQL: opening and migrating the
// database, transactions (on SQLite, one writer at a time per store, in
// a queue of its own), the count of misses that makes an update of a
// missing record cost what one of a present record does, the queries of
// the root-secret checks, and [Table], which reads and writes the records
// of one table from its column list and a record's binding to those
// columns. The store gives the errors its callers match ([Errors]);
// which record maps to which columns is the store's.
package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/nmauth/nmauth/internal/sqlmigrate"
	"github.com/nmauth/nmauth/internal/sqlstmt"
)

// Errors are the store's errors that a DB returns or matches.
type Errors struct {
	// NotFound is returned for a missing record.
	NotFound error
	// Exists is returned for an insert whose key is taken.
	Exists error
	// Broken is matched (errors.Is) by the error of a record that scanned
	// with columns that do not decode; such a record is returned with
	// its error, and a listing keeps it.
	Broken error
}

// DB is one store's database.
type DB struct {
	// SQL is the database.
	SQL *sql.DB
	// Postgres is set for PostgreSQL, else the database is SQLite.
	Postgres bool

	errs   Errors
	txOpts *sql.TxOptions
	// writes holds one token per writer allowed at a time. SQLite admits a
	// single writer per database; queuing writers here rather than in
	// SQLite's busy handler keeps waits fair and cancellable.
	writes    chan struct{}
	missWrite string
}

// SQLiteOpenWait is how long Open tries again to open a SQLite
// connection that SQLite refused as busy: the busy timeout of nmauth's
// SQLiteDSN.
const SQLiteOpenWait = 5 * time.Second

var errSchemaNewer = errors.New("nmauth: sql store: database schema is newer than this library")

// Open returns the DB over db, with nmauth's schema created or brought up
// to date (see [DB.Migrate]). On SQLite a first connection refused as
// busy is tried again for up to SQLiteOpenWait or until ctx ends.
func Open(ctx context.Context, db *sql.DB, postgres bool, errs Errors) (*DB, error) {
	d := &DB{SQL: db, Postgres: postgres, errs: errs}
	if postgres {
		// Stated explicitly so that a server default of SERIALIZABLE or
		// REPEATABLE READ cannot turn row-lock waits into failures.
		d.txOpts = &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	} else {
		d.writes = make(chan struct{}, 1)
		if err := sqlmigrate.ConnectSQLite(ctx, db, SQLiteOpenWait); err != nil {
			return nil, Wrap("open", err)
		}
	}
	d.missWrite = d.Rebind("INSERT INTO nmauth_misses (slot, misses) VALUES (?, 1) " +
		"ON CONFLICT (slot) DO UPDATE SET misses = nmauth_misses.misses + 1")
	if err := d.Migrate(ctx, sqlmigrate.Store(postgres, d.Rebind)); err != nil {
		return nil, err
	}
	return d, nil
}

// Migrate applies, in order, every version of schema the database has
// not seen, each in a transaction of its own. A database whose schema is
// newer than schema is refused.
func (d *DB) Migrate(ctx context.Context, schema sqlmigrate.Schema) error {
	for v := 1; v <= len(schema.Versions); v++ {
		err := d.InTx(ctx, "migrate", func(tx *sql.Tx) error {
			return migrateErr(schema.Step(ctx, tx, v))
		})
		if err != nil && d.Postgres {
			// The role may lack a grant that PostgreSQL does not name.
			err = sqlmigrate.PrivilegeHint(ctx, d.SQL, err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// migrateErr names the store in the error of a migration's step.
func migrateErr(err error) error {
	var newer *sqlmigrate.NewerError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &newer):
		return fmt.Errorf("%w: version %d, library knows %d", errSchemaNewer, newer.Have, newer.Know)
	}
	return fmt.Errorf("nmauth: sql store: %w", err)
}

// Rebind writes the ? placeholders of query in the database's form.
func (d *DB) Rebind(query string) string {
	if !d.Postgres {
		return query
	}
	return sqlstmt.Numbered(query)
}

// InTx runs fn in a transaction and commits it if fn returns nil. fn's
// error is returned as it is, so that errors from an update callback
// reach the caller unchanged; what names the operation in the DB's own
// errors. When fn returns the error of [DB.Miss], the transaction is
// committed and the error is Errors.NotFound.
func (d *DB) InTx(ctx context.Context, what string, fn func(*sql.Tx) error) error {
	release, err := d.acquireWrite(ctx)
	if err != nil {
		return Wrap(what, err)
	}
	defer release()
	tx, err := d.SQL.BeginTx(ctx, d.txOpts)
	if err != nil {
		return Wrap(what, err)
	}
	if err := fn(tx); errors.Is(err, errMissWritten) {
		if err := tx.Commit(); err != nil {
			return Wrap(what, err)
		}
		return d.errs.NotFound
	} else if err != nil {
		// The transaction is abandoned either way; fn's error is the one
		// the caller needs.
		_ = tx.Rollback()
		return err
	}
	return Wrap(what, tx.Commit())
}

// acquireWrite waits for this store's turn to write, or for ctx to end.
func (d *DB) acquireWrite(ctx context.Context) (release func(), err error) {
	if d.writes == nil {
		return func() {}, ctx.Err()
	}
	select {
	case d.writes <- struct{}{}:
		return func() { <-d.writes }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Exec runs one write statement, written with ? placeholders, in a
// transaction of its own.
func (d *DB) Exec(ctx context.Context, what, query string, args ...any) error {
	return d.InTx(ctx, what, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, d.Rebind(query), args...)
		return Wrap(what, err)
	})
}

// Insert runs an insert of sqlstmt.Insert in a transaction of its own,
// as InsertIn does.
func (d *DB) Insert(ctx context.Context, what, query string, args []any) error {
	return d.InTx(ctx, what, func(tx *sql.Tx) error { return d.InsertIn(ctx, tx, what, query, args) })
}

// InsertIn runs an INSERT ... ON CONFLICT DO NOTHING in tx and reports a
// row that was not inserted as Errors.Exists. Letting the database decide
// keeps two concurrent creates of one key correct without reading driver
// error codes.
func (d *DB) InsertIn(ctx context.Context, tx *sql.Tx, what, query string, args []any) error {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return Wrap(what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return Wrap(what, err)
	}
	if n == 0 {
		return d.errs.Exists
	}
	return nil
}

// errMissWritten tells InTx that an update found no record and wrote the
// misses instead: it commits, and the caller gets Errors.NotFound.
var errMissWritten = errors.New("nmauth: sql store: missing record, miss written")

// missSlots is how many rows nmauth_misses holds at most: the misses of
// different keys take different rows, so that on PostgreSQL a flood of
// unknown names does not queue on one row lock.
const missSlots = 64

// Miss counts an update of the missing key in nmauth_misses, in the
// transaction that looked for it, and returns the error that tells InTx
// to commit. So an update of a missing record writes and commits one row
// as an update of one that exists does: a failed login of an unknown name
// costs the database what a wrong password of a known one costs, and its
// time tells nothing of whether the name is held.
func (d *DB) Miss(ctx context.Context, tx *sql.Tx, key string) error {
	h := fnv.New32a()
	h.Write([]byte(key))
	slot := int64(h.Sum32() % missSlots)
	if _, err := tx.ExecContext(ctx, d.missWrite, slot); err != nil {
		return Wrap("count a miss", err)
	}
	return errMissWritten
}

// Wrap prefixes an unexpected error with the operation that failed; it
// returns nil for nil.
func Wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("nmauth: sql store: %s: %w", what, err)
}

// ReadErr maps a missing row to Errors.NotFound; a broken record's error
// is returned as it is, since it names the record and the column.
func (d *DB) ReadErr(what string, err error) error {
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return d.errs.NotFound
	case errors.Is(err, d.errs.Broken):
		return err
	}
	return Wrap(what, err)
}
