package passkey

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nmauth/nmauth"
)

// SQLStore is a [Store] in a SQL database through database/sql, beside the
// tables of [nmauth.SQLStore] and in the same database if the application
// likes: SQLite for one process, PostgreSQL for several replicas, which
// then share every challenge and sign count.
//
// Open a SQLite database with [nmauth.SQLiteDSN]: its _txlock=immediate
// makes UpdateRecord's transaction take the write lock at BEGIN. On
// PostgreSQL, UpdateRecord locks the row with SELECT ... FOR UPDATE in a
// READ COMMITTED transaction. TakeChallenge is one DELETE ... RETURNING,
// so exactly one of concurrent takes gets the challenge.
//
// A record keeps its passkeys as one JSON column: a user has a handful,
// always read and written together. Times are Unix nanoseconds, 0 for the
// zero time.
type SQLStore struct {
	db      *sql.DB
	dialect nmauth.Dialect
	txOpts  *sql.TxOptions
	// writes holds one token per writer allowed at a time on SQLite, which
	// admits a single writer: waits queue here, fair and cancellable.
	writes chan struct{}
}

var _ Store = (*SQLStore)(nil)

var errSchemaNewer = errors.New("passkey: sql store: database schema is newer than this package")

// schemaLockID is the PostgreSQL advisory lock key that serializes this
// store's migrations across processes; it spells "passkey" in ASCII.
const schemaLockID int64 = 0x706173736b6579

// challengeLockID is the PostgreSQL advisory lock key that serializes the
// puts of challenges across processes; it spells "pkchall" in ASCII.
const challengeLockID int64 = 0x706b6368616c6c

// NewSQLStore returns a [SQLStore] over db, creating its tables or bringing
// them up to date first, as [nmauth.NewSQLStore] does with its own: each
// migration in its own transaction, recorded in the
// nmauth_passkey_schema_version table, under a lock so that several
// processes may start at once.
func NewSQLStore(ctx context.Context, db *sql.DB, d nmauth.Dialect) (*SQLStore, error) {
	if db == nil {
		return nil, errors.New("passkey: sql store: nil database")
	}
	s := &SQLStore{db: db, dialect: d}
	switch d {
	case nmauth.DialectSQLite:
		s.writes = make(chan struct{}, 1)
	case nmauth.DialectPostgres:
		s.txOpts = &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	default:
		return nil, fmt.Errorf("passkey: sql store: unknown dialect %q", d)
	}
	for v := 1; v <= len(migrations); v++ {
		if err := s.inTx(ctx, "migrate", func(tx *sql.Tx) error { return s.migrateTo(ctx, tx, v) }); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// migrations is the schema history: entry i brings it to version i+1.
// Entries are only ever appended.
var migrations = []func(blob string) []string{
	func(blob string) []string {
		return []string{
			`CREATE TABLE nmauth_passkey_users (
	name TEXT NOT NULL PRIMARY KEY,
	handle ` + blob + ` NOT NULL UNIQUE,
	account BIGINT NOT NULL,
	passkeys TEXT NOT NULL
)`,
			`CREATE TABLE nmauth_passkey_challenges (
	challenge_key TEXT NOT NULL PRIMARY KEY,
	flow TEXT NOT NULL,
	username TEXT NOT NULL,
	handle ` + blob + `,
	name TEXT NOT NULL,
	expires BIGINT NOT NULL
)`,
			`CREATE INDEX nmauth_passkey_challenges_expires ON nmauth_passkey_challenges (expires)`,
		}
	},
	// The challenges of a flow are counted through an index of their own.
	func(string) []string {
		return []string{`CREATE INDEX nmauth_passkey_challenges_flow ON nmauth_passkey_challenges (flow, expires)`}
	},
}

func (s *SQLStore) migrateTo(ctx context.Context, tx *sql.Tx, v int) error {
	if s.dialect == nmauth.DialectPostgres {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", schemaLockID); err != nil {
			return wrapSQL("migrate: lock", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS nmauth_passkey_schema_version (version BIGINT NOT NULL PRIMARY KEY)`); err != nil {
		return wrapSQL("migrate: version table", err)
	}
	var current int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM nmauth_passkey_schema_version`).Scan(&current); err != nil {
		return wrapSQL("migrate: read version", err)
	}
	switch {
	case current > len(migrations):
		return fmt.Errorf("%w: version %d, package knows %d", errSchemaNewer, current, len(migrations))
	case current >= v:
		return nil
	}
	blob := "BLOB"
	if s.dialect == nmauth.DialectPostgres {
		blob = "BYTEA"
	}
	for _, stmt := range migrations[v-1](blob) {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return wrapSQL(fmt.Sprintf("migrate to version %d", v), err)
		}
	}
	_, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO nmauth_passkey_schema_version (version) VALUES (?)`), v)
	return wrapSQL("migrate: record version", err)
}

const recordColumns = `name, handle, account, passkeys`

// GetRecord implements [Store].
func (s *SQLStore) GetRecord(ctx context.Context, user string) (Record, error) {
	return scanRecord(s.db.QueryRowContext(ctx, s.rebind(`SELECT `+recordColumns+` FROM nmauth_passkey_users WHERE name = ?`), user))
}

// RecordByHandle implements [Store], through the handle's unique index.
func (s *SQLStore) RecordByHandle(ctx context.Context, handle []byte) (Record, error) {
	return scanRecord(s.db.QueryRowContext(ctx, s.rebind(`SELECT `+recordColumns+` FROM nmauth_passkey_users WHERE handle = ?`), handle))
}

// CreateRecord implements [Store]. The database decides a conflict, on the
// name or the handle, so two concurrent creates are never both stored.
func (s *SQLStore) CreateRecord(ctx context.Context, r Record) error {
	args, err := recordArgs(r)
	if err != nil {
		return err
	}
	return s.inTx(ctx, "create record", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO nmauth_passkey_users (`+recordColumns+`) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`), args...)
		if err != nil {
			return wrapSQL("create record", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmp.Or(wrapSQL("create record", err), nmauth.ErrExists)
		}
		return nil
	})
}

// UpdateRecord implements [Store] in one transaction that holds the row's
// write lock from the read to the commit.
func (s *SQLStore) UpdateRecord(ctx context.Context, user string, fn func(*Record) error) error {
	lock := ""
	if s.dialect == nmauth.DialectPostgres {
		lock = " FOR UPDATE"
	}
	return s.inTx(ctx, "update record", func(tx *sql.Tx) error {
		r, err := scanRecord(tx.QueryRowContext(ctx, s.rebind(`SELECT `+recordColumns+` FROM nmauth_passkey_users WHERE name = ?`+lock), user))
		if err != nil {
			return err
		}
		if err := fn(&r); err != nil {
			return err
		}
		r.User = user
		args, err := recordArgs(r)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.rebind(`UPDATE nmauth_passkey_users SET handle = ?, account = ?, passkeys = ? WHERE name = ?`), append(args[1:], user)...)
		return wrapSQL("update record", err)
	})
}

// DeleteRecord implements [Store].
func (s *SQLStore) DeleteRecord(ctx context.Context, user string) error {
	return s.inTx(ctx, "delete record", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM nmauth_passkey_users WHERE name = ?`), user)
		return wrapSQL("delete record", err)
	})
}

// PutChallenge implements [Store]: in one transaction it drops the
// challenges that expired before now, found through their index, counts
// those of c's flow through another, and stores c if there is room. The
// transaction holds SQLite's write lock from its start; on PostgreSQL it
// takes an advisory lock first, so that puts on several replicas count
// and insert one after the other. A flow whose live challenges fill its
// room already is refused before, by one read that takes no lock, so
// that a flood of refused puts does not queue for it.
func (s *SQLStore) PutChallenge(ctx context.Context, c Challenge, now time.Time, limit int) error {
	expires, err := encodeTime(c.Expires)
	if err != nil {
		return err
	}
	var live int
	if err := s.db.QueryRowContext(ctx, s.rebind(countLive), string(c.Flow), now.UnixNano(), limit).Scan(&live); err != nil {
		return wrapSQL("count challenges", err)
	}
	if live >= limit {
		return ErrChallengesFull
	}
	return s.inTx(ctx, "put challenge", func(tx *sql.Tx) error {
		if s.dialect == nmauth.DialectPostgres {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", challengeLockID); err != nil {
				return wrapSQL("put challenge: lock", err)
			}
		}
		if _, err := tx.ExecContext(ctx, s.rebind(`DELETE FROM nmauth_passkey_challenges WHERE expires <= ?`), now.UnixNano()); err != nil {
			return wrapSQL("drop expired challenges", err)
		}
		var n int
		if err := tx.QueryRowContext(ctx, s.rebind(countLive), string(c.Flow), now.UnixNano(), limit).Scan(&n); err != nil {
			return wrapSQL("count challenges", err)
		}
		if n >= limit {
			return ErrChallengesFull
		}
		res, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO nmauth_passkey_challenges (challenge_key, flow, username, handle, name, expires)
VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`), c.Key, string(c.Flow), c.User, c.Handle, c.Name, expires)
		if err != nil {
			return wrapSQL("put challenge", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmp.Or(wrapSQL("put challenge", err), nmauth.ErrExists)
		}
		return nil
	})
}

// countLive counts the live challenges of a flow, up to a limit, through
// their index on (flow, expires).
const countLive = `SELECT COUNT(*) FROM (SELECT 1 FROM nmauth_passkey_challenges WHERE flow = ? AND expires > ? LIMIT ?) AS live`

// TakeChallenge implements [Store] with one DELETE ... RETURNING.
func (s *SQLStore) TakeChallenge(ctx context.Context, key string) (Challenge, error) {
	release, err := s.acquireWrite(ctx)
	if err != nil {
		return Challenge{}, wrapSQL("take challenge", err)
	}
	defer release()
	c := Challenge{Key: key}
	var flow string
	var expires int64
	err = s.db.QueryRowContext(ctx, s.rebind(`DELETE FROM nmauth_passkey_challenges WHERE challenge_key = ?
RETURNING flow, username, handle, name, expires`), key).Scan(&flow, &c.User, &c.Handle, &c.Name, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return Challenge{}, nmauth.ErrNotFound
	}
	if err != nil {
		return Challenge{}, wrapSQL("take challenge", err)
	}
	c.Flow, c.Expires = Flow(flow), decodeTime(expires)
	return c, nil
}

type rowScanner interface{ Scan(dest ...any) error }

func scanRecord(row rowScanner) (Record, error) {
	var r Record
	var account int64
	var passkeys string
	err := row.Scan(&r.User, &r.Handle, &account, &passkeys)
	if errors.Is(err, sql.ErrNoRows) {
		return Record{}, nmauth.ErrNotFound
	}
	if err != nil {
		return Record{}, wrapSQL("read record", err)
	}
	r.Account = decodeTime(account)
	if err := json.Unmarshal([]byte(passkeys), &r.Passkeys); err != nil {
		return Record{}, fmt.Errorf("%w: passkeys of %q: %w", nmauth.ErrDataFault, r.User, err)
	}
	return r, nil
}

// recordArgs returns r's column values in the order of recordColumns.
func recordArgs(r Record) ([]any, error) {
	account, err := encodeTime(r.Account)
	if err != nil {
		return nil, err
	}
	passkeys, err := json.Marshal(r.Passkeys)
	if err != nil {
		return nil, wrapSQL("encode passkeys", err)
	}
	if r.Passkeys == nil {
		passkeys = []byte("[]")
	}
	return []any{r.User, r.Handle, account, string(passkeys)}, nil
}

// inTx runs fn in a transaction and commits it if fn returns nil; fn's
// error is returned as it is.
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
	if err := fn(tx); err != nil {
		_ = tx.Rollback() // abandoned either way; fn's error is the one to return
		return err
	}
	return wrapSQL(what, tx.Commit())
}

// acquireWrite waits for this store's turn to write on SQLite, or for ctx
// to end.
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

// rebind writes the placeholders of query in the store's dialect.
func (s *SQLStore) rebind(query string) string { return s.dialect.Rebind(query) }

func wrapSQL(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("passkey: sql store: %s: %w", what, err)
}

// encodeTime is t in Unix nanoseconds, 0 for the zero time; a time that
// would not read back equal (out of int64's range, or the epoch itself) is
// refused rather than stored wrong.
func encodeTime(t time.Time) (int64, error) {
	if t.IsZero() {
		return 0, nil
	}
	n := t.UnixNano()
	if n == 0 || !time.Unix(0, n).Equal(t) {
		return 0, fmt.Errorf("passkey: sql store: time %s out of range", t.UTC().Format(time.RFC3339Nano))
	}
	return n, nil
}

func decodeTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
