package sqldb

import (
	"context"
	"encoding/hex"
	"errors"
)

// KeyChecks returns the check values of the root secrets in
// nmauth_key_checks, by key id.
func (d *DB) KeyChecks(ctx context.Context) (map[string]string, error) {
	rows, err := d.SQL.QueryContext(ctx, "SELECT key_id, check_value FROM nmauth_key_checks")
	if err != nil {
		return nil, Wrap("key checks", err)
	}
	defer rows.Close()
	checks := map[string]string{}
	for rows.Next() {
		var id, v string
		if err := rows.Scan(&id, &v); err != nil {
			return nil, Wrap("key checks", err)
		}
		checks[id] = v
	}
	return checks, Wrap("key checks", rows.Err())
}

// AddKeyCheck records the check value of keyID, unless it has one.
func (d *DB) AddKeyCheck(ctx context.Context, keyID, check string) error {
	err := d.Insert(ctx, "add key check", d.Rebind("INSERT INTO nmauth_key_checks (key_id, check_value) VALUES (?, ?) ON CONFLICT (key_id) DO NOTHING"), []any{keyID, check})
	if errors.Is(err, d.errs.Exists) {
		return nil
	}
	return err
}

// HasAccounts reports whether the database holds a user or a host.
func (d *DB) HasAccounts(ctx context.Context) (bool, error) {
	var n int64
	err := d.SQL.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM nmauth_users LIMIT 1) u) + (SELECT COUNT(*) FROM (SELECT 1 FROM nmauth_hosts LIMIT 1) h)").Scan(&n)
	return n > 0, Wrap("has accounts", err)
}

// SealedKeyIDs counts the users with a TOTP secret by the key id of the
// root secret it is sealed under (bytes 1 to 8 of the sealed form, in
// hex; "" for a sealed form too short to hold one), in one query that
// reads that column alone, so that the root-secret check at start decodes
// no row and is not stopped by a broken one.
func (d *DB) SealedKeyIDs(ctx context.Context) (map[string]int, error) {
	kid := "substr(totp_secret, 2, 8)"
	if d.Postgres {
		kid = "substring(totp_secret from 2 for 8)"
	}
	where := "length(totp_secret) > 0"
	if !d.Postgres {
		// A secret of the wrong type is a broken record of its user
		// alone, not one sealed under an unknown key.
		where += " AND typeof(totp_secret) = 'blob'"
	}
	rows, err := d.SQL.QueryContext(ctx, "SELECT "+kid+", COUNT(*) FROM nmauth_users WHERE "+where+" GROUP BY 1")
	if err != nil {
		return nil, Wrap("sealed key ids", err)
	}
	defer rows.Close()
	ids := map[string]int{}
	for rows.Next() {
		var id []byte
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, Wrap("sealed key ids", err)
		}
		if len(id) < 8 {
			id = nil // as the key ring names a sealed form too short to hold one
		}
		ids[hex.EncodeToString(id)] += n
	}
	return ids, Wrap("sealed key ids", rows.Err())
}
