package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	_ "modernc.org/sqlite"             // driver "sqlite"

	"github.com/nmauth/nmauth"
)

// openTimeout bounds connecting to the database and migrating its schema.
const openTimeout = 30 * time.Second

// database is the store behind --db.
type database struct {
	*nmauth.SQLStore
	db *sql.DB
	// name is safe to log: the SQLite path, or the URL without password.
	name string
}

func isPostgresURL(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// openDatabase opens --db and brings its schema up to date.
func openDatabase(ctx context.Context, target string) (*database, error) {
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	if isPostgresURL(target) {
		return openPostgres(ctx, target)
	}
	return openSQLite(ctx, target)
}

func openPostgres(ctx context.Context, target string) (*database, error) {
	u, err := url.Parse(target)
	if err != nil {
		// The parse error would quote the URL, password and all.
		return nil, errors.New("--db: malformed postgres:// URL")
	}
	db, err := sql.Open("pgx", target)
	if err != nil {
		return nil, fmt.Errorf("opening PostgreSQL: %w", err)
	}
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(4)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return newDatabase(ctx, db, nmauth.DialectPostgres, u.Redacted())
}

func openSQLite(ctx context.Context, path string) (*database, error) {
	if path == "" {
		return nil, errors.New("--db: empty path")
	}
	if err := createPrivateFile(path); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", nmauth.SQLiteDSN(path))
	if err != nil {
		return nil, fmt.Errorf("opening SQLite database %s: %w", path, err)
	}
	return newDatabase(ctx, db, nmauth.DialectSQLite, path)
}

func newDatabase(ctx context.Context, db *sql.DB, d nmauth.Dialect, name string) (*database, error) {
	st, err := nmauth.NewSQLStore(ctx, db, d)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("opening database %s: %w", name, err)
	}
	return &database{SQLStore: st, db: db, name: name}, nil
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
