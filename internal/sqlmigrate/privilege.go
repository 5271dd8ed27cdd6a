package sqlmigrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/nmauth/nmauth/internal/sqlstmt"
)

// The SQLSTATE codes PostgreSQL gives a role that may not create a table:
// insufficient_privilege on the schema, and invalid_schema_name when no
// schema of its search_path is one it may use.
const (
	sqlStateInsufficientPrivilege = "42501"
	sqlStateNoSchema              = "3F000"
)

// PrivilegeHint adds to err, a migration's failure on PostgreSQL, the
// grant the store's role lacks when it lacks one on the schema its tables
// go into: an administrator's GRANT ALL ON DATABASE does not give it, and
// PostgreSQL's own message does not say what does. Any other error is
// returned as it is.
func PrivilegeHint(ctx context.Context, db *sql.DB, err error) error {
	var coded interface{ SQLState() string }
	if !errors.As(err, &coded) {
		return err
	}
	code := coded.SQLState()
	if code != sqlStateInsufficientPrivilege && code != sqlStateNoSchema {
		return err
	}
	var role, searchPath string
	var schema sql.NullString
	q := `SELECT current_user, current_schema(), current_setting('search_path')`
	if db.QueryRowContext(ctx, q).Scan(&role, &schema, &searchPath) != nil {
		return err
	}
	if !schema.Valid {
		// No schema of the search_path is usable: name the first one
		// that is not the role's own name, which the path looks up first.
		schema.String = sqlstmt.FirstSchema(searchPath)
	}
	return fmt.Errorf("%w; the PostgreSQL role %s may not create the store's tables in schema %s: "+
		"as its owner or a superuser, GRANT USAGE, CREATE ON SCHEMA %s TO %s (GRANT ALL ON DATABASE does not give it), "+
		"or set the role's search_path to a schema where it may (see docs/nmauthd.md, \"PostgreSQL\")",
		err, sqlstmt.QuoteIdent(role), sqlstmt.QuoteIdent(schema.String), sqlstmt.QuoteIdent(schema.String), sqlstmt.QuoteIdent(role))
}
