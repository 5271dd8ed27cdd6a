// This file holds the SQLStore itself: the dialects it serves, opening a
// database (NewSQLStore, SQLiteDSN) and the root-secret checks. Its tables
// are in sqlusers.go, sqlhosts.go, sqlaccess.go and sqlenroll.go, each with
// the mapping of its records to columns, and its broken records in
// sqlrepair.go. Transactions, the queue of SQLite writes, the migrations
// and the statements of a table are internal/sqldb's.

package nmauth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/nmauth/nmauth/internal/sqldb"
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
	db     *sqldb.DB
	users  *sqldb.Table[User]
	hosts  *sqldb.Table[Host]
	tokens *sqldb.Table[AccessToken]
	keys   *sqldb.Table[EnrollmentKey]
	// getHostLogin is GetHostLogin's statement, prepared as the tables'
	// reads of one record are (see sqldb.Table.Prepare).
	getHostLogin *sql.Stmt
}

var (
	_ Store              = (*SQLStore)(nil)
	_ KeyCheckStore      = (*SQLStore)(nil)
	_ HostBatchStore     = (*SQLStore)(nil)
	_ HostLoginStore     = (*SQLStore)(nil)
	_ AccessTokenStore   = (*SQLStore)(nil)
	_ EnrollmentKeyStore = (*SQLStore)(nil)
	_ RepairStore        = (*SQLStore)(nil)
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
	if d != DialectSQLite && d != DialectPostgres {
		return nil, fmt.Errorf("%w %q", errSQLDialect, d)
	}
	sdb, err := sqldb.Open(ctx, db, d == DialectPostgres,
		sqldb.Errors{NotFound: ErrNotFound, Exists: ErrExists, Broken: ErrBrokenRecord})
	if err != nil {
		return nil, err
	}
	s := &SQLStore{db: sdb, users: sqlUsers.On(sdb), hosts: sqlHosts.On(sdb),
		tokens: sqlAccessTokens.On(sdb), keys: sqlEnrollKeys.On(sdb)}
	if err := s.users.Prepare(ctx, false); err != nil {
		return nil, err
	}
	if err := s.hosts.Prepare(ctx, true); err != nil {
		return nil, err
	}
	if s.getHostLogin, err = db.PrepareContext(ctx, sdb.Rebind(sqlHostLoginQuery)); err != nil {
		return nil, sqldb.Wrap("prepare get host login", err)
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
	return sqlstmt.Numbered(query)
}

// KeyChecks implements [KeyCheckStore].
func (s *SQLStore) KeyChecks(ctx context.Context) (map[string]string, error) {
	return s.db.KeyChecks(ctx)
}

// AddKeyCheck implements [KeyCheckStore].
func (s *SQLStore) AddKeyCheck(ctx context.Context, keyID, check string) error {
	return s.db.AddKeyCheck(ctx, keyID, check)
}

// HasAccounts implements [KeyCheckStore].
func (s *SQLStore) HasAccounts(ctx context.Context) (bool, error) { return s.db.HasAccounts(ctx) }

// sealedKeyIDs implements keyIDCounter (see sqldb.DB.SealedKeyIDs).
func (s *SQLStore) sealedKeyIDs(ctx context.Context) (map[string]int, error) {
	return s.db.SealedKeyIDs(ctx)
}
