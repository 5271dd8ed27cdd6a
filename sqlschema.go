// This file holds the SQLStore's schema: the application of its
// migrations, which internal/sqlmigrate holds, the column lists of users
// and hosts, and their statements written once for each dialect.

package nmauth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/nmauth/nmauth/internal/sqlmigrate"
	"github.com/nmauth/nmauth/internal/sqlstmt"
)

var errSQLSchemaNewer = errors.New("nmauth: sql store: database schema is newer than this library")

// migrate applies, in order, every migration the database has not seen.
func (s *SQLStore) migrate(ctx context.Context) error {
	schema := sqlmigrate.Store(s.dialect == DialectPostgres, s.q.rebind)
	for v := 1; v <= len(schema.Versions); v++ {
		err := s.inTx(ctx, "migrate", func(tx *sql.Tx) error {
			return migrateErr(schema.Step(ctx, tx, v))
		})
		if err != nil && s.dialect == DialectPostgres {
			// The role may lack a grant that PostgreSQL does not name.
			err = sqlmigrate.PrivilegeHint(ctx, s.db, err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// migrateErr names the store in the error of a migration's step, and
// refuses a database whose schema is newer than this library with
// errSQLSchemaNewer.
func migrateErr(err error) error {
	var newer *sqlmigrate.NewerError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &newer):
		return fmt.Errorf("%w: version %d, library knows %d", errSQLSchemaNewer, newer.Have, newer.Know)
	}
	return fmt.Errorf("nmauth: sql store: %w", err)
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
	q.listUsers = q.rebind(sqlstmt.Page("nmauth_users", users, "name", d == DialectPostgres))
	q.insertUser = q.rebind(sqlstmt.Insert("nmauth_users", sqlUserColumns))
	q.updateUser = q.rebind(sqlstmt.Update("nmauth_users", sqlUserColumns))
	q.deleteUser = q.rebind("DELETE FROM nmauth_users WHERE name = ?")

	hosts := strings.Join(sqlHostColumns, ", ")
	q.getHost = q.rebind("SELECT " + hosts + " FROM nmauth_hosts WHERE id = ?")
	q.lockHost = q.getHost + forUpdate
	q.listHosts = q.rebind(sqlstmt.Page("nmauth_hosts", hosts, "id", d == DialectPostgres))
	q.insertHost = q.rebind(sqlstmt.Insert("nmauth_hosts", sqlHostColumns))
	q.updateHost = q.rebind(sqlstmt.Update("nmauth_hosts", sqlHostColumns))
	q.deleteHost = q.rebind("DELETE FROM nmauth_hosts WHERE id = ?")
	q.missWrite = q.rebind("INSERT INTO nmauth_misses (slot, misses) VALUES (?, 1) " +
		"ON CONFLICT (slot) DO UPDATE SET misses = nmauth_misses.misses + 1")
	return q
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
	return sqlstmt.Numbered(query)
}
