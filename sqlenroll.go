package nmauth

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/nmauth/nmauth/internal/sqlcol"
	"github.com/nmauth/nmauth/internal/sqlstmt"
)

var _ EnrollmentKeyStore = (*SQLStore)(nil)

// sqlEnrollColumns are the columns of nmauth_enrollment_keys, key first,
// in the order of enrollArgs and scanEnrollKey.
var sqlEnrollColumns = []string{
	"id", "name", "tags", "networks", "digest", "uses", "used",
	"expires_at", "revoked_at", "created_by", "created_at",
}

func (s *SQLStore) enrollQuery(rest string) string {
	return s.q.rebind("SELECT " + strings.Join(sqlEnrollColumns, ", ") + " FROM nmauth_enrollment_keys " + rest)
}

func enrollArgs(k EnrollmentKey) ([]any, error) {
	tags, err := encodeList(k.Tags, "tags")
	if err != nil {
		return nil, err
	}
	networks, err := encodeList(k.Networks, "networks")
	if err != nil {
		return nil, err
	}
	times, err := encodeTimes(k.ExpiresAt, k.RevokedAt, k.CreatedAt)
	if err != nil {
		return nil, err
	}
	return []any{
		k.ID, k.Name, tags, networks, k.Digest, int64(k.Uses), int64(k.Used),
		times[0], times[1], k.CreatedBy, times[2],
	}, nil
}

func scanEnrollKey(row sqlcol.RowScanner) (EnrollmentKey, error) {
	c, err := sqlcol.ScanCells(row, len(sqlEnrollColumns))
	if err != nil {
		return EnrollmentKey{}, err
	}
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
	args, err := enrollArgs(k)
	if err != nil {
		return err
	}
	return s.insert(ctx, "create enrollment key", s.q.rebind(sqlstmt.Insert("nmauth_enrollment_keys", sqlEnrollColumns)), args)
}

// GetEnrollmentKey implements [EnrollmentKeyStore].
func (s *SQLStore) GetEnrollmentKey(ctx context.Context, id string) (EnrollmentKey, error) {
	k, err := scanEnrollKey(s.db.QueryRowContext(ctx, s.enrollQuery("WHERE id = ?"), id))
	if err != nil {
		return EnrollmentKey{}, readErr("get enrollment key", err)
	}
	return k, nil
}

// ListEnrollmentKeys implements [EnrollmentKeyStore]. A key whose tags
// or networks do not decode is listed with them empty.
func (s *SQLStore) ListEnrollmentKeys(ctx context.Context) ([]EnrollmentKey, error) {
	const what = "list enrollment keys"
	rows, err := s.db.QueryContext(ctx, s.enrollQuery("ORDER BY created_at, id"))
	if err != nil {
		return nil, wrapSQL(what, err)
	}
	defer rows.Close()
	out := []EnrollmentKey{}
	for rows.Next() {
		k, err := scanEnrollKey(rows)
		if err != nil && !errors.Is(err, ErrBrokenRecord) {
			return nil, wrapSQL(what, err)
		}
		out = append(out, k)
	}
	return out, wrapSQL(what, rows.Err())
}

// RevokeEnrollmentKey implements [EnrollmentKeyStore].
func (s *SQLStore) RevokeEnrollmentKey(ctx context.Context, id string, at time.Time) error {
	const what = "revoke enrollment key"
	n, err := encodeTimes(at)
	if err != nil {
		return err
	}
	return s.inTx(ctx, what, func(tx *sql.Tx) error {
		var found int
		err := tx.QueryRowContext(ctx, s.q.rebind("SELECT 1 FROM nmauth_enrollment_keys WHERE id = ?"), id).Scan(&found)
		if err != nil {
			return readErr(what, err)
		}
		_, err = tx.ExecContext(ctx, s.q.rebind("UPDATE nmauth_enrollment_keys SET revoked_at = ? WHERE id = ? AND revoked_at = 0"), n[0], id)
		return wrapSQL(what, err)
	})
}

// DeleteEnrollmentKey implements [EnrollmentKeyStore].
func (s *SQLStore) DeleteEnrollmentKey(ctx context.Context, id string) error {
	return s.exec(ctx, "delete enrollment key", "DELETE FROM nmauth_enrollment_keys WHERE id = ?", id)
}

// JoinHost implements [EnrollmentKeyStore] in one transaction: one
// conditional UPDATE takes a use of the key, and its count of rows says
// whether the use was this join's (on PostgreSQL, an UPDATE that waited
// for another's row lock tests its condition again on the row that one
// committed); then the host's INSERT, whose conflict rolls the use back.
func (s *SQLStore) JoinHost(ctx context.Context, keyID, digest string, h Host, now time.Time) (EnrollmentKey, error) {
	const what = "join host"
	at, err := encodeTimes(now)
	if err != nil {
		return EnrollmentKey{}, err
	}
	host, err := hostArgs(h)
	if err != nil {
		return EnrollmentKey{}, err
	}
	var k EnrollmentKey
	err = s.inTx(ctx, what, func(tx *sql.Tx) error {
		k, err = scanEnrollKey(tx.QueryRowContext(ctx, s.q.rebind(`UPDATE nmauth_enrollment_keys SET used = used + 1
WHERE id = ? AND digest = ? AND revoked_at = 0 AND (expires_at = 0 OR expires_at > ?) AND (uses = 0 OR used < uses)
RETURNING `+strings.Join(sqlEnrollColumns, ", ")), keyID, digest, at[0]))
		if err != nil {
			// A key whose networks cannot be read admits no join.
			return readErr(what, err)
		}
		return insertIn(ctx, tx, what, s.q.insertHost, host)
	})
	if err != nil {
		return EnrollmentKey{}, err
	}
	return k, nil
}
