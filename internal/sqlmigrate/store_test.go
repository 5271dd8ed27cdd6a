package sqlmigrate

import (
	"strings"
	"testing"
)

// TestStore writes the SQLStore's schema for each database: the same
// versions, a BYTEA secret and the byte-order indexes for PostgreSQL
// under its lock, a BLOB secret and no indexes for SQLite.
func TestStore(t *testing.T) {
	pg, lite := Store(true, numbered), Store(false, numbered)
	if len(pg.Versions) != 6 || len(lite.Versions) != len(pg.Versions) {
		t.Fatalf("%d versions for PostgreSQL, %d for SQLite", len(pg.Versions), len(lite.Versions))
	}
	if pg.Table != "nmauth_schema_version" || lite.Table != pg.Table || pg.Lock != storeLock || lite.Lock != 0 {
		t.Errorf("tables %q and %q, locks %d and %d", pg.Table, lite.Table, pg.Lock, lite.Lock)
	}
	if !strings.Contains(pg.Versions[0][0], "totp_secret BYTEA,") || !strings.Contains(lite.Versions[0][0], "totp_secret BLOB,") {
		t.Errorf("users table %q / %q", pg.Versions[0][0], lite.Versions[0][0])
	}
	if len(pg.Versions[1]) != 2 || len(lite.Versions[1]) != 0 {
		t.Errorf("version 2: %q for PostgreSQL, %q for SQLite", pg.Versions[1], lite.Versions[1])
	}
	if pg.Rebind("?") != "$1" {
		t.Errorf("Rebind not kept")
	}
}
