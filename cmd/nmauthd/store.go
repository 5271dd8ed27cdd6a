package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	_ "modernc.org/sqlite"             // driver "sqlite"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/passkey"
)

// openTimeout bounds connecting to the database and migrating its schema.
const openTimeout = 30 * time.Second

// database is the store behind --db.
type database struct {
	*nmauth.SQLStore
	db      *sql.DB
	dialect nmauth.Dialect
	// name is safe to log: the SQLite path, or postgres://user@host:port/db.
	name string

	// passkeys keeps the passkeys and their challenges, in tables of their
	// own in the same database.
	passkeys *passkey.SQLStore
}

// openDatabase opens --db and brings its schema up to date; log gets
// the warnings about a SQLite file's mode.
func openDatabase(ctx context.Context, target string, log *slog.Logger) (*database, error) {
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	if isPostgresDSN(target) {
		return openPostgres(ctx, target)
	}
	return openSQLite(ctx, target, log)
}

func openPostgres(ctx context.Context, target string) (*database, error) {
	name, err := postgresConfig(target)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("pgx", target)
	if err != nil {
		return nil, fmt.Errorf("opening PostgreSQL: %w", err)
	}
	setPool(db)
	return newDatabase(ctx, db, nmauth.DialectPostgres, name)
}

func openSQLite(ctx context.Context, path string, log *slog.Logger) (*database, error) {
	if path == "" {
		return nil, errors.New("--db: empty path")
	}
	if err := createPrivateFile(path); err != nil {
		return nil, err
	}
	if err := checkDatabaseFiles(path, os.Geteuid(), log); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", nmauth.SQLiteDSN(path))
	if err != nil {
		return nil, fmt.Errorf("opening SQLite database %s: %w", path, err)
	}
	setPool(db)
	return newDatabase(ctx, db, nmauth.DialectSQLite, path)
}

// poolSize bounds the database connections of one nmauthd.
const poolSize = 16

// setPool keeps as many connections idle as may be open, for five minutes:
// under load a connection returned to a pool that keeps fewer idle is
// closed, and the next request opens another and prepares the store's
// reads on it again, which cost a sixth of a SQLite host login and more
// on PostgreSQL, where a connection is a server process.
func setPool(db *sql.DB) {
	db.SetMaxOpenConns(poolSize)
	db.SetMaxIdleConns(poolSize)
	db.SetConnMaxIdleTime(5 * time.Minute)
}

func newDatabase(ctx context.Context, db *sql.DB, d nmauth.Dialect, name string) (*database, error) {
	st, err := nmauth.NewSQLStore(ctx, db, d)
	if err == nil {
		_, err = db.ExecContext(ctx, createMemberships)
	}
	var pk *passkey.SQLStore
	if err == nil {
		pk, err = passkey.NewSQLStore(ctx, db, d)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("opening database %s: %w", name, err)
	}
	return &database{SQLStore: st, passkeys: pk, db: db, dialect: d, name: name}, nil
}

// createMemberships makes nmauthd's own table beside the Store's: which
// host is a member of which network, for node login. The library leaves
// membership to the application; this is the demo server's answer.
const createMemberships = `CREATE TABLE IF NOT EXISTS nmauthd_memberships (
	network TEXT NOT NULL,
	host_id TEXT NOT NULL,
	PRIMARY KEY (network, host_id)
)`

// query rewrites the ? placeholders of q as $1, $2, … for PostgreSQL.
func (d *database) query(q string) string { return d.dialect.Rebind(q) }

// addMembership makes a host a member of a network; once is enough. It
// reports whether the host was not a member already.
func (d *database) addMembership(ctx context.Context, network, hostID string) (bool, error) {
	res, err := d.db.ExecContext(ctx, d.query(`INSERT INTO nmauthd_memberships (network, host_id) VALUES (?, ?) ON CONFLICT DO NOTHING`), network, hostID)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// isMember is the Config.NodeMember of nmauthd.
func (d *database) isMember(ctx context.Context, network, hostID string) (bool, error) {
	var one int
	err := d.db.QueryRowContext(ctx, d.query(`SELECT 1 FROM nmauthd_memberships WHERE network = ? AND host_id = ?`), network, hostID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// createPrivateFile makes an empty database file readable by its owner
// only, if there is none yet. It holds password hashes; SQLite gives its
// -wal and -shm files the mode of the database file.
func createPrivateFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating database file: %w", err)
	}
	return f.Close()
}

func (d *database) Close() error { return d.db.Close() }
