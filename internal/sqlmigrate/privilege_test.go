package sqlmigrate

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// sqlStateError is a driver error with a SQLSTATE, as pgx's is.
type sqlStateError string

func (e sqlStateError) Error() string    { return "SQLSTATE " + string(e) }
func (e sqlStateError) SQLState() string { return string(e) }

// roleDB answers the query of a role's place with one row: role, the
// current schema (NULL when nil) and the search_path.
type roleDB struct{ row []driver.Value }

func (d roleDB) Open(string) (driver.Conn, error)             { return d, nil }
func (d roleDB) Connect(context.Context) (driver.Conn, error) { return d, nil }
func (d roleDB) Driver() driver.Driver                        { return d }
func (d roleDB) Prepare(string) (driver.Stmt, error)          { return d, nil }
func (d roleDB) Close() error                                 { return nil }
func (d roleDB) Begin() (driver.Tx, error)                    { return nil, errFailed }
func (d roleDB) NumInput() int                                { return -1 }
func (d roleDB) Exec([]driver.Value) (driver.Result, error)   { return nil, errFailed }
func (d roleDB) Query([]driver.Value) (driver.Rows, error)    { return &roleRows{row: d.row}, nil }

type roleRows struct{ row []driver.Value }

func (r *roleRows) Columns() []string {
	return []string{"current_user", "current_schema", "search_path"}
}
func (r *roleRows) Close() error { return nil }

func (r *roleRows) Next(dest []driver.Value) error {
	if r.row == nil {
		return io.EOF
	}
	copy(dest, r.row)
	r.row = nil
	return nil
}

// TestPrivilegeHint names the grant a role lacks on the schema its
// tables go into, the first of its search_path when none is usable, and
// leaves any other error as it is.
func TestPrivilegeHint(t *testing.T) {
	tests := []struct {
		name string
		err  error
		row  []driver.Value
		want string // in the error, "" for err as it is
	}{
		{"no privilege", sqlStateError("42501"), []driver.Value{"app", "public", "public"},
			"GRANT USAGE, CREATE ON SCHEMA public TO app"},
		{"no schema", sqlStateError("3F000"), []driver.Value{"App", nil, `"$user", auth`},
			`may not create the store's tables in schema auth: as its owner or a superuser, GRANT USAGE, CREATE ON SCHEMA auth TO "App"`},
		{"other SQLSTATE", sqlStateError("23505"), []driver.Value{"app", "public", "public"}, ""},
		{"no SQLSTATE", errFailed, []driver.Value{"app", "public", "public"}, ""},
		{"unread role", sqlStateError("42501"), nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db := sql.OpenDB(roleDB{row: tc.row})
			defer db.Close()
			in := fmt.Errorf("migrate to version 1: %w", tc.err)
			got := PrivilegeHint(context.Background(), db, in)
			if !errors.Is(got, tc.err) {
				t.Fatalf("error %v lost %v", got, tc.err)
			}
			if tc.want == "" && got != in || tc.want != "" && !strings.Contains(got.Error(), tc.want) {
				t.Errorf("error %q, want %q in it", got, tc.want)
			}
		})
	}
}
