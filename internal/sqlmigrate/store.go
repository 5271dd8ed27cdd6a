package sqlmigrate

// storeLock is the PostgreSQL advisory lock key that serializes the
// migrations of nmauth's SQLStore across processes; it spells "nmauth"
// in ASCII.
const storeLock int64 = 0x6e6d61757468

// Store is the schema of nmauth's SQLStore, for PostgreSQL when postgres
// is set and for SQLite else, with rebind writing the placeholders of
// the database. Its versions are recorded in nmauth_schema_version.
func Store(postgres bool, rebind func(string) string) Schema {
	s := Schema{Table: "nmauth_schema_version", Rebind: rebind}
	if postgres {
		s.Lock = storeLock
	}
	for _, m := range storeVersions {
		s.Versions = append(s.Versions, m(postgres))
	}
	return s
}

// storeVersions is the SQLStore's schema history: entry i brings the
// schema to version i+1. Entries are only ever appended, never edited.
var storeVersions = []func(postgres bool) []string{
	func(postgres bool) []string {
		blob := "BLOB"
		if postgres {
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
	func(postgres bool) []string {
		if !postgres {
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
	func(bool) []string {
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
	func(bool) []string {
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
	// that it costs what an update of one that exists does (see the
	// SQLStore's missWrite).
	func(bool) []string {
		return []string{`CREATE TABLE nmauth_misses (
	slot BIGINT NOT NULL PRIMARY KEY,
	misses BIGINT NOT NULL
)`}
	},
	// Version 6: enrollment keys. uses is 0 for an unlimited key;
	// expires_at and revoked_at are 0 for never and not.
	func(bool) []string {
		return []string{`CREATE TABLE nmauth_enrollment_keys (
	id TEXT NOT NULL PRIMARY KEY,
	name TEXT NOT NULL,
	tags TEXT NOT NULL,
	networks TEXT NOT NULL,
	digest TEXT NOT NULL,
	uses BIGINT NOT NULL,
	used BIGINT NOT NULL,
	expires_at BIGINT NOT NULL,
	revoked_at BIGINT NOT NULL,
	created_by TEXT NOT NULL,
	created_at BIGINT NOT NULL
)`}
	},
}
