package nmauth

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nmauth/nmauth/internal/state"
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
)

var (
	errSQLNilDB       = errors.New("nmauth: sql store: nil database")
	errSQLDialect     = errors.New("nmauth: sql store: unknown dialect")
	errSQLTimeRange   = errors.New("nmauth: sql store: time out of range")
	errSQLSchemaNewer = errors.New("nmauth: sql store: database schema is newer than this library")
)

// sqlSchemaLockID is the PostgreSQL advisory lock key that serializes
// migrations across processes; it spells "nmauth" in ASCII.
const sqlSchemaLockID int64 = 0x6e6d61757468

// NewSQLStore returns a [SQLStore] over db, creating the tables or bringing
// them up to date first. Each migration runs in its own transaction and is
// recorded in the nmauth_schema_version table, so several processes may
// start at once on one database: on PostgreSQL an advisory lock, on SQLite
// the write lock, lets exactly one of them apply each migration. A database
// whose schema is newer than this library is refused.
func NewSQLStore(ctx context.Context, db *sql.DB, d Dialect) (*SQLStore, error) {
	if db == nil {
		return nil, errSQLNilDB
	}
	s := &SQLStore{db: db, dialect: d, q: newSQLQueries(d)}
	switch d {
	case DialectSQLite:
		s.writes = make(chan struct{}, 1)
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
	// The path is part of a SQLite URI, where '?' and '#' end the path and
	// '%' starts an escape; an absolute path gets an empty authority so
	// that one starting with "//" is not read as a host name.
	p := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	if strings.HasPrefix(p, "/") {
		p = "//" + p
	}
	return "file:" + p + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)" +
		"&_pragma=foreign_keys(1)&_pragma=synchronous(FULL)&_txlock=immediate"
}

// GetUser implements [Store].
func (s *SQLStore) GetUser(ctx context.Context, name string) (User, error) {
	u, err := scanUser(s.getUser.QueryRowContext(ctx, name))
	if err != nil {
		return User{}, readErr("get user", err)
	}
	return u, nil
}

// ListUsers implements [Store] with one keyset query: the page starts
// after the last key of the one before, found in the key's index, so every
// page costs the same however deep into the table it is.
func (s *SQLStore) ListUsers(ctx context.Context, after string, limit int) ([]User, error) {
	return listPage(ctx, s.db, "list users", s.q.listUsers, after, limit, scanUser)
}

// CreateUser implements [Store].
func (s *SQLStore) CreateUser(ctx context.Context, u User) error {
	args, err := userArgs(u)
	if err != nil {
		return err
	}
	return s.insert(ctx, "create user", s.q.insertUser, args)
}

// UpdateUser implements [Store]. It runs in one transaction that holds the
// row's write lock from the read to the commit.
func (s *SQLStore) UpdateUser(ctx context.Context, name string, fn func(*User) error) error {
	return s.inTx(ctx, "update user", func(tx *sql.Tx) error {
		u, err := scanUser(tx.QueryRowContext(ctx, s.q.lockUser, name))
		if errors.Is(err, sql.ErrNoRows) {
			return s.missWrite(ctx, tx, name)
		}
		if err != nil {
			return readErr("update user", err)
		}
		if err := fn(&u); err != nil {
			return err
		}
		args, err := userArgs(u)
		if err != nil {
			return err
		}
		// The key is left out of the SET list, so fn cannot move the record.
		_, err = tx.ExecContext(ctx, s.q.updateUser, append(args[1:], name)...)
		return wrapSQL("update user", err)
	})
}

// DeleteUser implements [Store].
func (s *SQLStore) DeleteUser(ctx context.Context, name string) error {
	return s.inTx(ctx, "delete user", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.q.deleteUser, name)
		return wrapSQL("delete user", err)
	})
}

// GetHost implements [Store].
func (s *SQLStore) GetHost(ctx context.Context, id string) (Host, error) {
	h, err := scanHost(s.getHost.QueryRowContext(ctx, id))
	if err != nil {
		return Host{}, readErr("get host", err)
	}
	return h, nil
}

// ListHosts implements [Store] as ListUsers does.
func (s *SQLStore) ListHosts(ctx context.Context, after string, limit int) ([]Host, error) {
	return listPage(ctx, s.db, "list hosts", s.q.listHosts, after, limit, scanHost)
}

// listPage runs a page query, whose arguments are after and limit, and
// scans its rows.
func listPage[T any](ctx context.Context, db *sql.DB, what, query, after string, limit int, scan func(rowScanner) (T, error)) ([]T, error) {
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

// CreateHost implements [Store].
func (s *SQLStore) CreateHost(ctx context.Context, h Host) error {
	args, err := hostArgs(h)
	if err != nil {
		return err
	}
	return s.insert(ctx, "create host", s.q.insertHost, args)
}

// UpdateHost implements [Store]. It runs in one transaction that holds the
// row's write lock from the read to the commit.
func (s *SQLStore) UpdateHost(ctx context.Context, id string, fn func(*Host) error) error {
	return s.inTx(ctx, "update host", func(tx *sql.Tx) error {
		h, err := scanHost(tx.QueryRowContext(ctx, s.q.lockHost, id))
		if errors.Is(err, sql.ErrNoRows) {
			return s.missWrite(ctx, tx, id)
		}
		if err != nil {
			return readErr("update host", err)
		}
		if err := fn(&h); err != nil {
			return err
		}
		args, err := hostArgs(h)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.q.updateHost, append(args[1:], id)...)
		return wrapSQL("update host", err)
	})
}

// UpdateHosts implements [HostBatchStore] in one transaction, which locks
// the hosts' rows in the order of their ids, so that two batches on
// PostgreSQL never wait for each other in a circle.
func (s *SQLStore) UpdateHosts(ctx context.Context, updates []HostUpdate) error {
	order := make([]int, len(updates))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return strings.Compare(updates[i].ID, updates[j].ID) })
	return s.inTx(ctx, "update hosts", func(tx *sql.Tx) error {
		lock, update := tx.StmtContext(ctx, s.lockHostStmt), tx.StmtContext(ctx, s.updateHostStmt)
		for _, i := range order {
			u := &updates[i]
			h, err := scanHost(lock.QueryRowContext(ctx, u.ID))
			switch {
			case errors.Is(err, sql.ErrNoRows):
				u.Err = ErrNotFound
				continue
			case errors.Is(err, ErrBrokenRecord):
				u.Err = err
				continue
			case err != nil:
				return readErr("update hosts", err)
			}
			if u.Err = u.Fn(&h); u.Err != nil {
				continue
			}
			args, err := hostArgs(h)
			if err != nil {
				u.Err = err
				continue
			}
			if _, err := update.ExecContext(ctx, append(args[1:], u.ID)...); err != nil {
				return wrapSQL("update hosts", err)
			}
		}
		return nil
	})
}

// DeleteHost implements [Store].
func (s *SQLStore) DeleteHost(ctx context.Context, id string) error {
	return s.inTx(ctx, "delete host", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.q.deleteHost, id)
		return wrapSQL("delete host", err)
	})
}

// KeyChecks implements [KeyCheckStore].
func (s *SQLStore) KeyChecks(ctx context.Context) (map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT key_id, check_value FROM nmauth_key_checks")
	if err != nil {
		return nil, wrapSQL("key checks", err)
	}
	defer rows.Close()
	checks := map[string]string{}
	for rows.Next() {
		var id, v string
		if err := rows.Scan(&id, &v); err != nil {
			return nil, wrapSQL("key checks", err)
		}
		checks[id] = v
	}
	return checks, wrapSQL("key checks", rows.Err())
}

// AddKeyCheck implements [KeyCheckStore].
func (s *SQLStore) AddKeyCheck(ctx context.Context, keyID, check string) error {
	err := s.insert(ctx, "add key check", s.q.rebind("INSERT INTO nmauth_key_checks (key_id, check_value) VALUES (?, ?) ON CONFLICT (key_id) DO NOTHING"), []any{keyID, check})
	if errors.Is(err, ErrExists) {
		return nil
	}
	return err
}

// HasAccounts implements [KeyCheckStore].
func (s *SQLStore) HasAccounts(ctx context.Context) (bool, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM nmauth_users LIMIT 1) u) + (SELECT COUNT(*) FROM (SELECT 1 FROM nmauth_hosts LIMIT 1) h)").Scan(&n)
	return n > 0, wrapSQL("has accounts", err)
}

// sealedKeyIDs counts the users with a TOTP secret by the key id of the
// root secret it is sealed under (bytes 1 to 8 of the sealed form), in one
// query that reads that column alone, so that the root-secret check at
// start decodes no row and is not stopped by a broken one.
func (s *SQLStore) sealedKeyIDs(ctx context.Context) (map[string]int, error) {
	kid := "substr(totp_secret, 2, 8)"
	if s.dialect == DialectPostgres {
		kid = "substring(totp_secret from 2 for 8)"
	}
	where := "length(totp_secret) > 0"
	if s.dialect == DialectSQLite {
		// A secret of the wrong type is a broken record of its user
		// alone (see scanUser), not one sealed under an unknown key.
		where += " AND typeof(totp_secret) = 'blob'"
	}
	rows, err := s.db.QueryContext(ctx, "SELECT "+kid+", COUNT(*) FROM nmauth_users WHERE "+where+" GROUP BY 1")
	if err != nil {
		return nil, wrapSQL("sealed key ids", err)
	}
	defer rows.Close()
	ids := map[string]int{}
	for rows.Next() {
		var id []byte
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, wrapSQL("sealed key ids", err)
		}
		if len(id) < 8 {
			id = nil // as keyRing.sealedKeyID names a sealed form too short to hold one
		}
		ids[hex.EncodeToString(id)] += n
	}
	return ids, wrapSQL("sealed key ids", rows.Err())
}

// insert runs an INSERT ... ON CONFLICT DO NOTHING and reports a row that
// was not inserted as ErrExists. Letting the database decide keeps two
// concurrent creates of one key correct without reading driver error codes.
func (s *SQLStore) insert(ctx context.Context, what, query string, args []any) error {
	return s.inTx(ctx, what, func(tx *sql.Tx) error { return insertIn(ctx, tx, what, query, args) })
}

// insertIn runs an insert of insertSQL in tx: ErrExists when its key is
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

// migrate applies, in order, every migration the database has not seen.
func (s *SQLStore) migrate(ctx context.Context) error {
	for i := range sqlMigrations {
		err := s.inTx(ctx, "migrate", func(tx *sql.Tx) error {
			return s.migrateTo(ctx, tx, i+1)
		})
		if err != nil {
			return s.schemaPrivilegeHint(ctx, err)
		}
	}
	return nil
}

// migrateTo applies migration v unless the database already has it. It
// rereads the version after taking the schema lock, because another
// process may have migrated while this one waited.
func (s *SQLStore) migrateTo(ctx context.Context, tx *sql.Tx, v int) error {
	if s.dialect == DialectPostgres {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", sqlSchemaLockID); err != nil {
			return wrapSQL("migrate: lock", err)
		}
	}
	if _, err := tx.ExecContext(ctx, sqlCreateVersionTable); err != nil {
		return wrapSQL("migrate: version table", err)
	}
	var current int
	if err := tx.QueryRowContext(ctx, sqlCurrentVersion).Scan(&current); err != nil {
		return wrapSQL("migrate: read version", err)
	}
	switch {
	case current > len(sqlMigrations):
		return fmt.Errorf("%w: version %d, library knows %d", errSQLSchemaNewer, current, len(sqlMigrations))
	case current >= v:
		return nil
	}
	for _, stmt := range sqlMigrations[v-1](s.dialect) {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return wrapSQL(fmt.Sprintf("migrate to version %d", v), err)
		}
	}
	_, err := tx.ExecContext(ctx, s.q.rebind("INSERT INTO nmauth_schema_version (version) VALUES (?)"), v)
	return wrapSQL("migrate: record version", err)
}

const (
	sqlCreateVersionTable = `CREATE TABLE IF NOT EXISTS nmauth_schema_version (
	version BIGINT NOT NULL PRIMARY KEY
)`
	sqlCurrentVersion = `SELECT COALESCE(MAX(version), 0) FROM nmauth_schema_version`
)

// sqlMigrations is the schema history: entry i brings the schema to
// version i+1. Entries are only ever appended, never edited.
var sqlMigrations = []func(Dialect) []string{
	func(d Dialect) []string {
		blob := "BLOB"
		if d == DialectPostgres {
			blob = "BYTEA"
		}
		return []string{
			`CREATE TABLE nmauth_users (
	name TEXT NOT NULL PRIMARY KEY,
	password_hash TEXT NOT NULL,
	disabled BOOLEAN NOT NULL,
	totp_secret ` + blob + `,
	totp_last_step BIGINT NOT NULL,
	totp_failures BIGINT NOT NULL,
	totp_blocked_until BIGINT NOT NULL,
	preauth_id TEXT NOT NULL,
	preauth_failures BIGINT NOT NULL,
	recovery_codes TEXT NOT NULL,
	password_failures BIGINT NOT NULL,
	password_blocked_until BIGINT NOT NULL,
	tokens_valid_after BIGINT NOT NULL,
	created_at BIGINT NOT NULL
)`,
			`CREATE TABLE nmauth_hosts (
	id TEXT NOT NULL PRIMARY KEY,
	mac_address TEXT NOT NULL,
	password_hash TEXT NOT NULL,
	disabled BOOLEAN NOT NULL,
	password_failures BIGINT NOT NULL,
	password_blocked_until BIGINT NOT NULL,
	tokens_valid_after BIGINT NOT NULL,
	created_at BIGINT NOT NULL
)`,
		}
	},
	func(d Dialect) []string {
		if d != DialectPostgres {
			// The primary key's index is already in byte order.
			return nil
		}
		return []string{
			`CREATE INDEX nmauth_users_name_bytes ON nmauth_users (name COLLATE "C")`,
			`CREATE INDEX nmauth_hosts_id_bytes ON nmauth_hosts (id COLLATE "C")`,
		}
	},
	// Version 3: revocation by generation rather than by clock, failures
	// per client address, and the check values of the root secrets. Rows
	// from earlier versions start at generation 0; tokens minted before carry no
	// generation and are refused, so an upgrade logs everyone out once.
	func(Dialect) []string {
		var stmts []string
		for _, table := range []string{"nmauth_users", "nmauth_hosts"} {
			stmts = append(stmts,
				"ALTER TABLE "+table+" ADD COLUMN generation BIGINT NOT NULL DEFAULT 0",
				"ALTER TABLE "+table+" ADD COLUMN password_clients TEXT NOT NULL DEFAULT '[]'",
				"ALTER TABLE "+table+" DROP COLUMN tokens_valid_after",
			)
		}
		return append(stmts, `CREATE TABLE nmauth_key_checks (
	key_id TEXT NOT NULL PRIMARY KEY,
	check_value TEXT NOT NULL
)`)
	},
	// Version 4: access tokens, and the user tokens a logout revoked.
	func(Dialect) []string {
		return []string{
			"ALTER TABLE nmauth_users ADD COLUMN logged_out TEXT NOT NULL DEFAULT '[]'",
			`CREATE TABLE nmauth_access_tokens (
	id TEXT NOT NULL PRIMARY KEY,
	user_name TEXT NOT NULL,
	name TEXT NOT NULL,
	digest TEXT NOT NULL,
	read_only BOOLEAN NOT NULL,
	networks TEXT NOT NULL,
	generation BIGINT NOT NULL,
	created_by TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	expires_at BIGINT NOT NULL,
	last_used BIGINT NOT NULL
)`,
			"CREATE INDEX nmauth_access_tokens_user ON nmauth_access_tokens (user_name)",
		}
	},
	// Version 5: the misses, written by an update of a missing record so
	// that it costs what an update of one that exists does (see
	// missWrite).
	func(Dialect) []string {
		return []string{`CREATE TABLE nmauth_misses (
	slot BIGINT NOT NULL PRIMARY KEY,
	misses BIGINT NOT NULL
)`}
	},
	// Version 6: enrollment keys (see sqlenroll.go).
	sqlEnrollMigration,
}

// The column lists put the key first; userArgs, hostArgs, scanUser and
// scanHost follow the same order.
var (
	sqlUserColumns = []string{
		"name", "password_hash", "disabled",
		"totp_secret", "totp_last_step", "totp_failures", "totp_blocked_until",
		"preauth_id", "preauth_failures", "recovery_codes",
		"password_failures", "password_blocked_until", "password_clients",
		"generation", "created_at", "logged_out",
	}
	sqlHostColumns = []string{
		"id", "mac_address", "password_hash", "disabled",
		"password_failures", "password_blocked_until", "password_clients",
		"generation", "created_at",
	}
)

// sqlQueries holds every statement of a store, written once for its
// dialect.
type sqlQueries struct {
	dialect                            Dialect
	getUser, lockUser, listUsers       string
	insertUser, updateUser, deleteUser string
	getHost, lockHost, listHosts       string
	insertHost, updateHost, deleteHost string
	missWrite                          string
}

func newSQLQueries(d Dialect) sqlQueries {
	q := sqlQueries{dialect: d}
	forUpdate := ""
	if d == DialectPostgres {
		// SQLite has no row locks; its transaction already holds the
		// database write lock from BEGIN IMMEDIATE.
		forUpdate = " FOR UPDATE"
	}
	users := strings.Join(sqlUserColumns, ", ")
	q.getUser = q.rebind("SELECT " + users + " FROM nmauth_users WHERE name = ?")
	q.lockUser = q.getUser + forUpdate
	q.listUsers = q.rebind(pageSQL("nmauth_users", users, "name", d))
	q.insertUser = q.rebind(insertSQL("nmauth_users", sqlUserColumns))
	q.updateUser = q.rebind(updateSQL("nmauth_users", sqlUserColumns))
	q.deleteUser = q.rebind("DELETE FROM nmauth_users WHERE name = ?")

	hosts := strings.Join(sqlHostColumns, ", ")
	q.getHost = q.rebind("SELECT " + hosts + " FROM nmauth_hosts WHERE id = ?")
	q.lockHost = q.getHost + forUpdate
	q.listHosts = q.rebind(pageSQL("nmauth_hosts", hosts, "id", d))
	q.insertHost = q.rebind(insertSQL("nmauth_hosts", sqlHostColumns))
	q.updateHost = q.rebind(updateSQL("nmauth_hosts", sqlHostColumns))
	q.deleteHost = q.rebind("DELETE FROM nmauth_hosts WHERE id = ?")
	q.missWrite = q.rebind("INSERT INTO nmauth_misses (slot, misses) VALUES (?, 1) " +
		"ON CONFLICT (slot) DO UPDATE SET misses = nmauth_misses.misses + 1")
	return q
}

// pageSQL selects the page of a table after a key. SQLite compares TEXT
// byte by byte by default; PostgreSQL compares by the database's collation
// unless told "C", which is byte order for UTF-8 and is the collation of
// the index that the second migration adds for this query.
func pageSQL(table, cols, key string, d Dialect) string {
	k := key
	if d == DialectPostgres {
		k = key + ` COLLATE "C"`
	}
	return "SELECT " + cols + " FROM " + table + " WHERE " + k + " > ? ORDER BY " + k + " LIMIT ?"
}

// insertSQL inserts every column; the first column is the key.
func insertSQL(table string, cols []string) string {
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ")
	return "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES (" + marks +
		") ON CONFLICT (" + cols[0] + ") DO NOTHING"
}

// updateSQL sets every column but the key, which comes last.
func updateSQL(table string, cols []string) string {
	sets := make([]string, len(cols)-1)
	for i, c := range cols[1:] {
		sets[i] = c + " = ?"
	}
	return "UPDATE " + table + " SET " + strings.Join(sets, ", ") + " WHERE " + cols[0] + " = ?"
}

// rebind writes the placeholders of query in the store's dialect.
func (q sqlQueries) rebind(query string) string { return q.dialect.Rebind(query) }

// Rebind writes the ? placeholders of query in the dialect's form: as
// they are for SQLite, $1, $2, … for PostgreSQL. It counts every '?', so
// it suits statements written with parameters only, with no '?' in a
// literal or an identifier; the stores of nmauth's packages, and an
// application's tables beside them, write theirs this way once for both
// databases.
func (d Dialect) Rebind(query string) string {
	if d != DialectPostgres {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	for _, r := range query {
		if r != '?' {
			b.WriteRune(r)
			continue
		}
		n++
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}

// userArgs returns u's column values in the order of sqlUserColumns.
func userArgs(u User) ([]any, error) {
	codes, err := json.Marshal(u.RecoveryCodes)
	if err != nil {
		return nil, wrapSQL("encode recovery codes", err)
	}
	clients, err := encodeClients(u.State.v.PasswordClients)
	if err != nil {
		return nil, err
	}
	times, err := encodeTimes(u.State.v.TOTPBlockedUntil, u.State.v.PasswordBlockedUntil, u.CreatedAt)
	if err != nil {
		return nil, err
	}
	loggedOut, err := encodeList(u.State.v.LoggedOut, "logged-out tokens")
	if err != nil {
		return nil, err
	}
	var secret any // NULL unless there is a secret
	if len(u.TOTPSecret) > 0 {
		secret = u.TOTPSecret
	}
	return []any{
		u.Name, u.PasswordHash, u.Disabled,
		secret, u.State.v.TOTPLastStep, u.State.v.TOTPFailures, times[0],
		u.State.v.PreAuthID, u.State.v.PreAuthFailures, string(codes),
		u.State.v.PasswordFailures, times[1], clients,
		int64(u.State.v.Generation), times[2], loggedOut,
	}, nil
}

// encodeClients writes the per-client failures as JSON, "[]" for none.
func encodeClients(cs []state.Client) (string, error) {
	return encodeList(cs, "client failures")
}

// encodeList writes a list column as JSON, "[]" for none.
func encodeList[T any](vs []T, what string) (string, error) {
	if vs == nil {
		vs = []T{}
	}
	b, err := json.Marshal(vs)
	if err != nil {
		return "", wrapSQL("encode "+what, err)
	}
	return string(b), nil
}

// hostArgs returns h's column values in the order of sqlHostColumns.
func hostArgs(h Host) ([]any, error) {
	clients, err := encodeClients(h.State.v.PasswordClients)
	if err != nil {
		return nil, err
	}
	times, err := encodeTimes(h.State.v.PasswordBlockedUntil, h.CreatedAt)
	if err != nil {
		return nil, err
	}
	return []any{
		h.ID, h.MACAddress, h.PasswordHash, h.Disabled,
		h.State.v.PasswordFailures, times[0], clients,
		int64(h.State.v.Generation), times[1],
	}, nil
}

// rowScanner is the Scan method shared by *sql.Row and *sql.Rows.
type rowScanner interface {
	Scan(dest ...any) error
}

// scanUser reads a user's row. A column of the wrong type, or a JSON
// column that does not decode, is left at its zero value and named in
// the record's Broken, and the error is then a *BrokenRecordError for the
// first such column, returned with the record so that a listing can show
// it.
func scanUser(row rowScanner) (User, error) {
	c, err := scanCells(row, len(sqlUserColumns))
	if err != nil {
		return User{}, err
	}
	var u User
	d := columnDecoder{kind: "user"}
	u.Name = d.keyText(c[0])
	u.PasswordHash = d.text("password_hash", c[1])
	u.Disabled = d.boolean("disabled", c[2])
	u.TOTPSecret = d.blob("totp_secret", c[3])
	u.State.v.TOTPLastStep = d.integer("totp_last_step", c[4])
	u.State.v.TOTPFailures = d.count("totp_failures", c[5])
	u.State.v.TOTPBlockedUntil = decodeTime(d.integer("totp_blocked_until", c[6]))
	u.State.v.PreAuthID = d.text("preauth_id", c[7])
	u.State.v.PreAuthFailures = d.count("preauth_failures", c[8])
	decodeNullableColumn(&d, "recovery_codes", c[9], &u.RecoveryCodes)
	u.State.v.PasswordFailures = d.count("password_failures", c[10])
	u.State.v.PasswordBlockedUntil = decodeTime(d.integer("password_blocked_until", c[11]))
	decodeColumn(&d, "password_clients", c[12], &u.State.v.PasswordClients)
	u.State.v.Generation = uint64(d.integer("generation", c[13]))
	u.CreatedAt = decodeTime(d.integer("created_at", c[14]))
	decodeColumn(&d, "logged_out", c[15], &u.State.v.LoggedOut)
	u.Broken = d.broken
	return u, d.err()
}

// scanHost reads a host's row as scanUser reads a user's.
func scanHost(row rowScanner) (Host, error) {
	c, err := scanCells(row, len(sqlHostColumns))
	if err != nil {
		return Host{}, err
	}
	var h Host
	d := columnDecoder{kind: "host"}
	h.ID = d.keyText(c[0])
	h.MACAddress = d.text("mac_address", c[1])
	h.PasswordHash = d.text("password_hash", c[2])
	h.Disabled = d.boolean("disabled", c[3])
	h.State.v.PasswordFailures = d.count("password_failures", c[4])
	h.State.v.PasswordBlockedUntil = decodeTime(d.integer("password_blocked_until", c[5]))
	decodeColumn(&d, "password_clients", c[6], &h.State.v.PasswordClients)
	h.State.v.Generation = uint64(d.integer("generation", c[7]))
	h.CreatedAt = decodeTime(d.integer("created_at", c[8]))
	h.Broken = d.broken
	return h, d.err()
}

// encodeTimes converts each time to Unix nanoseconds, 0 for the zero time.
// A time that would not read back equal is refused rather than stored
// wrong: one outside the int64 range, and the epoch, which reads back as
// the zero time.
func encodeTimes(ts ...time.Time) ([]int64, error) {
	out := make([]int64, len(ts))
	for i, t := range ts {
		if t.IsZero() {
			continue
		}
		n := t.UnixNano()
		if n == 0 || !time.Unix(0, n).Equal(t) {
			return nil, fmt.Errorf("%w: %s", errSQLTimeRange, t.UTC().Format(time.RFC3339Nano))
		}
		out[i] = n
	}
	return out, nil
}

func decodeTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
