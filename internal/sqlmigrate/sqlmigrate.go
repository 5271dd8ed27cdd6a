// Package sqlmigrate brings the schema of a SQL store up to date, one
// version at a time, so that several processes may start at once on one
// database: each version is applied in a transaction of its own and
// recorded in the store's version table, and the version is read again
// under a lock (PostgreSQL's advisory lock, or the write lock that a
// SQLite transaction takes at BEGIN IMMEDIATE), so that exactly one of
// them applies it. [Store] is the history of nmauth's own SQLStore;
// [ConnectSQLite] opens a new SQLite file that others open at once, and
// [PrivilegeHint] names the grant a PostgreSQL role lacks when it may not
// create the tables.
package sqlmigrate

import (
	"context"
	"database/sql"
	"fmt"
)

// Schema is the history of one store's schema.
type Schema struct {
	// Table is the name of the version table, made when it is missing.
	Table string
	// Lock is the key of the PostgreSQL advisory lock taken in each
	// step's transaction; 0 takes none, for SQLite.
	Lock int64
	// Rebind writes the ? placeholders of a statement in the database's
	// form.
	Rebind func(string) string
	// Versions holds the statements of each version: entry i brings the
	// schema to version i+1. Entries are only ever appended.
	Versions [][]string
}

// NewerError is the error of a database whose schema is of a version
// newer than the Schema knows.
type NewerError struct {
	// Have is the database's version, Know the newest the Schema knows.
	Have, Know int
}

// Error names the two versions.
func (e *NewerError) Error() string {
	return fmt.Sprintf("schema version %d, newest known %d", e.Have, e.Know)
}

// Step applies version v in tx unless the database already has it. It
// reads the version after taking the lock, because another process may
// have migrated while this one waited. A failure names its stage
// ("migrate: lock: ...", "migrate to version 3: ..."), and a database
// newer than s is a *NewerError.
func (s Schema) Step(ctx context.Context, tx *sql.Tx, v int) error {
	if s.Lock != 0 {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", s.Lock); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+s.Table+" (\n\tversion BIGINT NOT NULL PRIMARY KEY\n)"); err != nil {
		return fmt.Errorf("migrate: version table: %w", err)
	}
	var current int
	if err := tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM "+s.Table).Scan(&current); err != nil {
		return fmt.Errorf("migrate: read version: %w", err)
	}
	switch {
	case current > len(s.Versions):
		return &NewerError{Have: current, Know: len(s.Versions)}
	case current >= v:
		return nil
	}
	for _, stmt := range s.Versions[v-1] {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("migrate to version %d: %w", v, err)
		}
	}
	if _, err := tx.ExecContext(ctx, s.Rebind("INSERT INTO "+s.Table+" (version) VALUES (?)"), v); err != nil {
		return fmt.Errorf("migrate: record version: %w", err)
	}
	return nil
}
