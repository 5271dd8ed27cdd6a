// This file holds the SQLStore's enrollment keys, a host's join, and the
// mapping of an EnrollmentKey to its row.

package nmauth

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/nmauth/nmauth/internal/sqlcol"
	"github.com/nmauth/nmauth/internal/sqldb"
)

// sqlEnrollKeys is nmauth_enrollment_keys; enrollArgs and scanEnrollKey
// follow the order of its columns.
var sqlEnrollKeys = sqldb.Table[EnrollmentKey]{
	Name: "nmauth_enrollment_keys", Noun: "enrollment key",
	Columns: []string{
		"id", "name", "tags", "networks", "digest", "uses", "used",
		"expires_at", "revoked_at", "created_by", "created_at",
	},
	Bind: enrollArgs, Scan: scanEnrollKey, Key: func(k EnrollmentKey) string { return k.ID },
}

func enrollArgs(k EnrollmentKey) ([]any, error) {
	var e sqlcol.Encoder
	tags := sqlcol.EncodeListTo(&e, k.Tags, "tags")
	networks := sqlcol.EncodeListTo(&e, k.Networks, "networks")
	times := e.Times(k.ExpiresAt, k.RevokedAt, k.CreatedAt)
	if e.Err != nil {
		return nil, e.Err
	}
	return []any{
		k.ID, k.Name, tags, networks, k.Digest, int64(k.Uses), int64(k.Used),
		times[0], times[1], k.CreatedBy, times[2],
	}, nil
}

func scanEnrollKey(c []sqlcol.Cell) (EnrollmentKey, error) {
	var k EnrollmentKey
	var d sqlcol.Decoder
	k.ID = d.KeyText(c[0])
	k.Name = d.Text("name", c[1])
	sqlcol.DecodeList(&d, "tags", c[2], &k.Tags)
	sqlcol.DecodeList(&d, "networks", c[3], &k.Networks)
	k.Digest = d.Text("digest", c[4])
	k.Uses, k.Used = d.Count("uses", c[5]), d.Count("used", c[6])
	k.Unlimited = k.Uses == 0
	k.ExpiresAt = d.Time("expires_at", c[7])
	k.RevokedAt = d.Time("revoked_at", c[8])
	k.CreatedBy = d.Text("created_by", c[9])
	k.CreatedAt = d.Time("created_at", c[10])
	return k, brokenErr("enrollment key", &d)
}

// CreateEnrollmentKey implements [EnrollmentKeyStore].
func (s *SQLStore) CreateEnrollmentKey(ctx context.Context, k EnrollmentKey) error {
	if k.Unlimited {
		k.Uses = 0
	}
	return s.keys.Create(ctx, k)
}

// GetEnrollmentKey implements [EnrollmentKeyStore].
func (s *SQLStore) GetEnrollmentKey(ctx context.Context, id string) (EnrollmentKey, error) {
	return s.keys.Get(ctx, id)
}

// ListEnrollmentKeys implements [EnrollmentKeyStore]. A key whose tags
// or networks do not decode is listed with them empty.
func (s *SQLStore) ListEnrollmentKeys(ctx context.Context) ([]EnrollmentKey, error) {
	return s.keys.List(ctx, []EnrollmentKey{}, s.keys.Select("ORDER BY created_at, id"))
}

// RevokeEnrollmentKey implements [EnrollmentKeyStore].
func (s *SQLStore) RevokeEnrollmentKey(ctx context.Context, id string, at time.Time) error {
	const what = "revoke enrollment key"
	n, err := sqlcol.EncodeTimes(at)
	if err != nil {
		return err
	}
	return s.db.InTx(ctx, what, func(tx *sql.Tx) error {
		var found int
		err := tx.QueryRowContext(ctx, s.db.Rebind("SELECT 1 FROM nmauth_enrollment_keys WHERE id = ?"), id).Scan(&found)
		if err != nil {
			return s.db.ReadErr(what, err)
		}
		_, err = tx.ExecContext(ctx, s.db.Rebind("UPDATE nmauth_enrollment_keys SET revoked_at = ? WHERE id = ? AND revoked_at = 0"), n[0], id)
		return sqldb.Wrap(what, err)
	})
}

// DeleteEnrollmentKey implements [EnrollmentKeyStore].
func (s *SQLStore) DeleteEnrollmentKey(ctx context.Context, id string) error {
	return s.keys.Delete(ctx, id)
}

// JoinHost implements [EnrollmentKeyStore] in one transaction: one
// conditional UPDATE takes a use of the key, and its count of rows says
// whether the use was this join's (on PostgreSQL, an UPDATE that waited
// for another's row lock tests its condition again on the row that one
// committed); then the host's INSERT, whose conflict rolls the use back.
func (s *SQLStore) JoinHost(ctx context.Context, keyID, digest string, h Host, now time.Time) (EnrollmentKey, error) {
	const what = "join host"
	at, err := sqlcol.EncodeTimes(now)
	if err != nil {
		return EnrollmentKey{}, err
	}
	host, err := hostArgs(h)
	if err != nil {
		return EnrollmentKey{}, err
	}
	var k EnrollmentKey
	err = s.db.InTx(ctx, what, func(tx *sql.Tx) error {
		k, err = s.keys.ScanRow(tx.QueryRowContext(ctx, s.db.Rebind(`UPDATE nmauth_enrollment_keys SET used = used + 1
WHERE id = ? AND digest = ? AND revoked_at = 0 AND (expires_at = 0 OR expires_at > ?) AND (uses = 0 OR used < uses)
RETURNING `+strings.Join(sqlEnrollKeys.Columns, ", ")), keyID, digest, at[0]))
		if err != nil {
			// A key whose networks cannot be read admits no join.
			return s.db.ReadErr(what, err)
		}
		return s.hosts.InsertIn(ctx, tx, what, host)
	})
	if err != nil {
		return EnrollmentKey{}, err
	}
	return k, nil
}
