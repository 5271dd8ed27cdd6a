package netmaker

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	_ "github.com/mattn/go-sqlite3"    // driver "sqlite3", Netmaker's own
)

// TablesDigest is a digest of every row of every table of the running
// server's database, read over a connection of its own (read only on
// SQLite), for tests that show nmauthd leaves Netmaker's tables as they
// were: equal digests before and after mean no row was added, removed or
// changed.
func (nm *netmakerServer) TablesDigest() string {
	nm.t.Helper()
	driver, dsn, list := "pgx", nm.DB,
		"SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
	if nm.Database == "sqlite" {
		driver, dsn, list = "sqlite3", "file:"+nm.DB+"?mode=ro", "SELECT name FROM sqlite_master WHERE type = 'table'"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		nm.t.Fatal(err)
	}
	defer db.Close()
	tables := queryStrings(nm.t, db, list)
	if len(tables) == 0 {
		nm.t.Fatalf("Netmaker's database %s holds no table", nm.Database)
	}
	slices.Sort(tables)
	h := sha256.New()
	for _, table := range tables {
		rows := queryRows(nm.t, db, `SELECT * FROM "`+strings.ReplaceAll(table, `"`, `""`)+`"`)
		slices.Sort(rows)
		for _, r := range rows {
			fmt.Fprintf(h, "%s\x00%s\n", table, r)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// queryStrings is the first column of every row of query.
func queryStrings(t *testing.T, db *sql.DB, query string) []string {
	t.Helper()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// queryRows is every row of query, each as its columns' bytes, quoted and
// joined.
func queryRows(t *testing.T, db *sql.DB, query string) []string {
	t.Helper()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, v := range vals {
			fmt.Fprintf(&b, "%q,", v)
		}
		out = append(out, b.String())
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestNetmakerTablesDigest proves TablesDigest on both databases: it is
// the same twice over an idle server, so Netmaker writes nothing by
// itself between the reads, and it changes when a user is disabled
// through Netmaker's API.
func TestNetmakerTablesDigest(t *testing.T) {
	for _, database := range []string{"sqlite", "postgres"} {
		t.Run(database, func(t *testing.T) {
			nm := startNetmaker(t, database)
			a := seedNetmaker(nm)
			before := nm.TablesDigest()
			if again := nm.TablesDigest(); again != before {
				t.Fatal("the digest of an idle Netmaker changed")
			}
			nm.DisableUser(a.User)
			if nm.TablesDigest() == before {
				t.Error("the digest did not change when Netmaker disabled a user")
			}
		})
	}
}
