package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"

	"github.com/nmauth/nmauth/internal/sqlcol"
	"github.com/nmauth/nmauth/internal/sqlstmt"
)

// Table is one table of records of type T. A Table value with its
// exported fields set describes the table; [Table.On] gives the table of
// one DB, which runs its statements.
type Table[T any] struct {
	// Name is the table's name, and Noun names a record in errors
	// ("get user", "list users").
	Name, Noun string
	// Columns are the table's columns, the key first.
	Columns []string
	// Bind returns a record's values in the order of Columns.
	Bind func(T) ([]any, error)
	// Scan reads the cells of a row of Columns. A record with columns
	// that do not decode is returned with an error that matches
	// Errors.Broken.
	Scan func([]sqlcol.Cell) (T, error)
	// Key returns a record's key.
	Key func(T) string
	// Collated pages by the database's order of keys rather than byte
	// order, for a table whose key has no index in byte order on
	// PostgreSQL.
	Collated bool

	db                                        *DB
	cols                                      string
	get, lock, page, insert, update, delete   string
	getStmt, lockStmt, updateStmt             *sql.Stmt
	whatGet, whatList, whatCreate, whatUpdate string
	whatDelete, whatUpdateAll                 string
}

// On returns the table t describes in db, its statements written for
// db's database.
func (t Table[T]) On(db *DB) *Table[T] {
	t.db = db
	t.cols = strings.Join(t.Columns, ", ")
	key := t.Columns[0]
	t.get = t.Select("WHERE " + key + " = ?")
	t.lock = t.get
	if db.Postgres {
		// SQLite has no row locks; its transaction already holds the
		// database write lock from BEGIN IMMEDIATE.
		t.lock += " FOR UPDATE"
	}
	t.page = db.Rebind(sqlstmt.Page(t.Name, t.cols, key, db.Postgres && !t.Collated))
	t.insert = db.Rebind(sqlstmt.Insert(t.Name, t.Columns))
	t.update = db.Rebind(sqlstmt.Update(t.Name, t.Columns))
	t.delete = db.Rebind("DELETE FROM " + t.Name + " WHERE " + key + " = ?")
	t.whatGet, t.whatList, t.whatCreate = "get "+t.Noun, "list "+t.Noun+"s", "create "+t.Noun
	t.whatUpdate, t.whatDelete, t.whatUpdateAll = "update "+t.Noun, "delete "+t.Noun, "update "+t.Noun+"s"
	return &t
}

// Select is the statement that reads the columns of the rows that rest
// (a WHERE or ORDER BY clause, written with ? placeholders) selects.
func (t *Table[T]) Select(rest string) string {
	return t.db.Rebind("SELECT " + t.cols + " FROM " + t.Name + " " + rest)
}

// ScanRow reads a row of Columns with Scan.
func (t *Table[T]) ScanRow(row sqlcol.RowScanner) (T, error) {
	c, err := sqlcol.ScanCells(row, len(t.Columns))
	if err != nil {
		var zero T
		return zero, err
	}
	return t.Scan(c)
}

// Prepare prepares the read of one record once (on each connection, as
// database/sql does) rather than having every Get parse it again; batch
// prepares the lock and the write of UpdateAll too. The statements live
// as long as the database.
func (t *Table[T]) Prepare(ctx context.Context, batch bool) error {
	var err error
	if t.getStmt, err = t.db.SQL.PrepareContext(ctx, t.get); err != nil {
		return Wrap("prepare "+t.whatGet, err)
	}
	if !batch {
		return nil
	}
	if t.lockStmt, err = t.db.SQL.PrepareContext(ctx, t.lock); err != nil {
		return Wrap("prepare lock "+t.Noun, err)
	}
	if t.updateStmt, err = t.db.SQL.PrepareContext(ctx, t.update); err != nil {
		return Wrap("prepare "+t.whatUpdate, err)
	}
	return nil
}

// Get reads the record of key: Errors.NotFound when there is none, the
// record's error when it is broken.
func (t *Table[T]) Get(ctx context.Context, key string) (T, error) {
	var row *sql.Row
	if t.getStmt != nil {
		row = t.getStmt.QueryRowContext(ctx, key)
	} else {
		row = t.db.SQL.QueryRowContext(ctx, t.get, key)
	}
	v, err := t.ScanRow(row)
	if err != nil {
		var zero T
		return zero, t.db.ReadErr(t.whatGet, err)
	}
	return v, nil
}

// Page lists the records after the key after, at most limit of them, in
// the byte order of their keys (see Collated), with one keyset query: the page starts
// after the last key of the one before, found in the key's index, so every
// page costs the same however deep into the table it is.
func (t *Table[T]) Page(ctx context.Context, after string, limit int) ([]T, error) {
	if limit <= 0 {
		return []T{}, ctx.Err()
	}
	return t.List(ctx, make([]T, 0, min(limit, 1024)), t.page, after, limit)
}

// List appends to out the records that query, a statement of Select,
// reads. A broken record is listed in its place, marked as Scan marks it.
func (t *Table[T]) List(ctx context.Context, out []T, query string, args ...any) ([]T, error) {
	rows, err := t.db.SQL.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, Wrap(t.whatList, err)
	}
	defer rows.Close()
	for rows.Next() {
		v, err := t.ScanRow(rows)
		if err != nil && !errors.Is(err, t.db.errs.Broken) {
			return nil, Wrap(t.whatList, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, Wrap(t.whatList, err)
	}
	return out, nil
}

// BrokenPage reads the page that Page reads and returns how many records
// it held, the key of the last, and the errors of those that are broken.
func (t *Table[T]) BrokenPage(ctx context.Context, after string, limit int) (n int, last string, broken []error, err error) {
	rows, err := t.db.SQL.QueryContext(ctx, t.page, after, limit)
	if err != nil {
		return 0, "", nil, err
	}
	defer rows.Close()
	for rows.Next() {
		v, err := t.ScanRow(rows)
		switch {
		case errors.Is(err, t.db.errs.Broken):
			broken = append(broken, err)
		case err != nil:
			return 0, "", nil, err
		}
		n, last = n+1, t.Key(v)
	}
	return n, last, broken, rows.Err()
}

// Create inserts v: Errors.Exists when its key is taken.
func (t *Table[T]) Create(ctx context.Context, v T) error {
	args, err := t.Bind(v)
	if err != nil {
		return err
	}
	return t.db.Insert(ctx, t.whatCreate, t.insert, args)
}

// InsertIn inserts the record of args, as Bind returns them, in tx, as
// DB.InsertIn does.
func (t *Table[T]) InsertIn(ctx context.Context, tx *sql.Tx, what string, args []any) error {
	return t.db.InsertIn(ctx, tx, what, t.insert, args)
}

// Update changes the record of key by fn in one transaction that holds
// the row's write lock from the read to the commit. A missing record is
// counted as a miss (see DB.Miss) and is Errors.NotFound; fn's error is
// returned as it is, and nothing is written.
func (t *Table[T]) Update(ctx context.Context, key string, fn func(*T) error) error {
	return t.db.InTx(ctx, t.whatUpdate, func(tx *sql.Tx) error {
		v, err := t.ScanRow(tx.QueryRowContext(ctx, t.lock, key))
		if errors.Is(err, sql.ErrNoRows) {
			return t.db.Miss(ctx, tx, key)
		}
		if err != nil {
			return t.db.ReadErr(t.whatUpdate, err)
		}
		if err := fn(&v); err != nil {
			return err
		}
		args, err := t.Bind(v)
		if err != nil {
			return err
		}
		// The key is left out of the SET list, so fn cannot move the record.
		_, err = tx.ExecContext(ctx, t.update, append(args[1:], key)...)
		return Wrap(t.whatUpdate, err)
	})
}

// UpdateAll changes the records of keys by fn in one transaction, with
// the statements that Prepare(ctx, true) prepared. It locks the rows in
// the byte order of their keys, so that two batches on PostgreSQL never
// wait for each other in a circle. done(i, err) is told the outcome of
// keys[i]: Errors.NotFound, the record's error when it is broken or does
// not bind, fn's error, or nil when it was written. Only an error of the
// database ends the batch, and is returned.
func (t *Table[T]) UpdateAll(ctx context.Context, keys []string, fn func(i int, v *T) error, done func(i int, err error)) error {
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return strings.Compare(keys[i], keys[j]) })
	return t.db.InTx(ctx, t.whatUpdateAll, func(tx *sql.Tx) error {
		lock, update := tx.StmtContext(ctx, t.lockStmt), tx.StmtContext(ctx, t.updateStmt)
		for _, i := range order {
			v, err := t.ScanRow(lock.QueryRowContext(ctx, keys[i]))
			switch {
			case errors.Is(err, sql.ErrNoRows):
				done(i, t.db.errs.NotFound)
				continue
			case errors.Is(err, t.db.errs.Broken):
				done(i, err)
				continue
			case err != nil:
				return t.db.ReadErr(t.whatUpdateAll, err)
			}
			if err := fn(i, &v); err != nil {
				done(i, err)
				continue
			}
			args, err := t.Bind(v)
			if err != nil {
				done(i, err)
				continue
			}
			done(i, nil)
			if _, err := update.ExecContext(ctx, append(args[1:], keys[i])...); err != nil {
				return Wrap(t.whatUpdateAll, err)
			}
		}
		return nil
	})
}

// Delete deletes the record of key; a missing one is no error.
func (t *Table[T]) Delete(ctx context.Context, key string) error {
	return t.db.InTx(ctx, t.whatDelete, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, t.delete, key)
		return Wrap(t.whatDelete, err)
	})
}

// Repair runs query (written with ? placeholders) with the values of
// args, when it is not nil, and key last, in a transaction that first
// reads the record of key again under its row's lock: a record that is
// gone, or of which broken no longer reports true, is left alone.
func (t *Table[T]) Repair(ctx context.Context, what, key string, broken func(T) bool, query string, args func() []any) error {
	return t.db.InTx(ctx, what, func(tx *sql.Tx) error {
		v, err := t.ScanRow(tx.QueryRowContext(ctx, t.lock, key))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil && !errors.Is(err, t.db.errs.Broken):
			return Wrap(what, err)
		case !broken(v):
			return nil
		}
		var vs []any
		if args != nil {
			vs = args()
		}
		_, err = tx.ExecContext(ctx, t.db.Rebind(query), append(vs, key)...)
		return Wrap(what, err)
	})
}
