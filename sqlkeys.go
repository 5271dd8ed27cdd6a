// This file holds the SQLStore's checks of the root secret: the check
// values of nmauth_key_checks, whether the database holds accounts, and
// the key ids the TOTP secrets are sealed under.

package nmauth

import (
	"context"
	"encoding/hex"
	"errors"

	"github.com/nmauth/nmauth/internal/sqldb"
)

// KeyChecks implements [KeyCheckStore].
func (s *SQLStore) KeyChecks(ctx context.Context) (map[string]string, error) {
	rows, err := s.db.SQL.QueryContext(ctx, "SELECT key_id, check_value FROM nmauth_key_checks")
	if err != nil {
		return nil, sqldb.Wrap("key checks", err)
	}
	defer rows.Close()
	checks := map[string]string{}
	for rows.Next() {
		var id, v string
		if err := rows.Scan(&id, &v); err != nil {
			return nil, sqldb.Wrap("key checks", err)
		}
		checks[id] = v
	}
	return checks, sqldb.Wrap("key checks", rows.Err())
}

// AddKeyCheck implements [KeyCheckStore].
func (s *SQLStore) AddKeyCheck(ctx context.Context, keyID, check string) error {
	err := s.db.Insert(ctx, "add key check", s.db.Rebind("INSERT INTO nmauth_key_checks (key_id, check_value) VALUES (?, ?) ON CONFLICT (key_id) DO NOTHING"), []any{keyID, check})
	if errors.Is(err, ErrExists) {
		return nil
	}
	return err
}

// HasAccounts implements [KeyCheckStore].
func (s *SQLStore) HasAccounts(ctx context.Context) (bool, error) {
	var n int64
	err := s.db.SQL.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM nmauth_users LIMIT 1) u) + (SELECT COUNT(*) FROM (SELECT 1 FROM nmauth_hosts LIMIT 1) h)").Scan(&n)
	return n > 0, sqldb.Wrap("has accounts", err)
}

// sealedKeyIDs counts the users with a TOTP secret by the key id of the
// root secret it is sealed under (bytes 1 to 8 of the sealed form), in one
// query that reads that column alone, so that the root-secret check at
// start decodes no row and is not stopped by a broken one.
func (s *SQLStore) sealedKeyIDs(ctx context.Context) (map[string]int, error) {
	kid := "substr(totp_secret, 2, 8)"
	if s.db.Postgres {
		kid = "substring(totp_secret from 2 for 8)"
	}
	where := "length(totp_secret) > 0"
	if !s.db.Postgres {
		// A secret of the wrong type is a broken record of its user
		// alone (see scanUser), not one sealed under an unknown key.
		where += " AND typeof(totp_secret) = 'blob'"
	}
	rows, err := s.db.SQL.QueryContext(ctx, "SELECT "+kid+", COUNT(*) FROM nmauth_users WHERE "+where+" GROUP BY 1")
	if err != nil {
		return nil, sqldb.Wrap("sealed key ids", err)
	}
	defer rows.Close()
	ids := map[string]int{}
	for rows.Next() {
		var id []byte
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, sqldb.Wrap("sealed key ids", err)
		}
		if len(id) < 8 {
			id = nil // as keyRing.sealedKeyID names a sealed form too short to hold one
		}
		ids[hex.EncodeToString(id)] += n
	}
	return ids, sqldb.Wrap("sealed key ids", rows.Err())
}
