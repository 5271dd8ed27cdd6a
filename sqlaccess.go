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

var _ AccessTokenStore = (*SQLStore)(nil)

// sqlAccessColumns are the columns of nmauth_access_tokens, key first, in
// the order of accessArgs and scanAccessToken.
var sqlAccessColumns = []string{
	"id", "user_name", "name", "digest", "read_only", "networks",
	"generation", "created_by", "created_at", "expires_at", "last_used",
}

func (s *SQLStore) accessQuery(rest string) string {
	return s.q.rebind("SELECT " + strings.Join(sqlAccessColumns, ", ") + " FROM nmauth_access_tokens " + rest)
}

func accessArgs(t AccessToken) ([]any, error) {
	networks, err := encodeList(t.Networks, "networks")
	if err != nil {
		return nil, err
	}
	times, err := encodeTimes(t.CreatedAt, t.ExpiresAt, t.LastUsed)
	if err != nil {
		return nil, err
	}
	return []any{
		t.ID, t.UserName, t.Name, t.Digest, t.ReadOnly, networks,
		int64(t.Generation), t.CreatedBy, times[0], times[1], times[2],
	}, nil
}

// scanAccessToken reads an access token's row as scanUser reads a
// user's. Networks that cannot be read leave the token's Networks nil,
// which would mean every network, so such a token must never be used: a
// read returns the error, and a listing marks it.
func scanAccessToken(row sqlcol.RowScanner) (AccessToken, error) {
	c, err := sqlcol.ScanCells(row, len(sqlAccessColumns))
	if err != nil {
		return AccessToken{}, err
	}
	var t AccessToken
	var d sqlcol.Decoder
	t.ID = d.KeyText(c[0])
	t.UserName = d.Text("user_name", c[1])
	t.Name = d.Text("name", c[2])
	t.Digest = d.Text("digest", c[3])
	t.ReadOnly = d.Boolean("read_only", c[4])
	sqlcol.DecodeList(&d, "networks", c[5], &t.Networks)
	t.Generation = uint64(d.Integer("generation", c[6]))
	t.CreatedBy = d.Text("created_by", c[7])
	t.CreatedAt = d.Time("created_at", c[8])
	t.ExpiresAt = d.Time("expires_at", c[9])
	t.LastUsed = d.Time("last_used", c[10])
	t.Broken = d.Broken
	return t, brokenErr("access token", &d)
}

// CreateAccessToken implements [AccessTokenStore].
func (s *SQLStore) CreateAccessToken(ctx context.Context, t AccessToken, max int) error {
	const what = "create access token"
	args, err := accessArgs(t)
	if err != nil {
		return err
	}
	// args[6] and args[8] are t's generation and creation time, as
	// stored.
	gen, made := args[6], args[8]
	return s.inTx(ctx, what, func(tx *sql.Tx) error {
		// Creations for one user take turns from here to the commit, so
		// that the count holds until the insert: SQLite's transaction
		// holds the write lock from its start; PostgreSQL's takes a lock
		// of the user's name, whether or not the user's row exists.
		if s.dialect == DialectPostgres {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1, hashtext($2))", accessTokensLockClass, t.UserName); err != nil {
				return wrapSQL(what, err)
			}
		}
		// The user's dead tokens (revoked by a move of the generation, or
		// expired) go, so that they neither count nor stay listed.
		if _, err := tx.ExecContext(ctx, s.q.rebind("DELETE FROM nmauth_access_tokens WHERE user_name = ? AND (generation <> ? OR expires_at <= ?)"), t.UserName, gen, made); err != nil {
			return wrapSQL(what, err)
		}
		var held int
		if err := tx.QueryRowContext(ctx, s.q.rebind("SELECT count(*) FROM nmauth_access_tokens WHERE user_name = ?"), t.UserName).Scan(&held); err != nil {
			return wrapSQL(what, err)
		}
		if held >= max {
			return ErrTooManyAccessTokens
		}
		return insertIn(ctx, tx, what, s.q.rebind(sqlstmt.Insert("nmauth_access_tokens", sqlAccessColumns)), args)
	})
}

// accessTokensLockClass is the first key of the PostgreSQL advisory lock
// that access-token creations for one user take, "nmat" in ASCII; the
// second is a hash of the user's name.
const accessTokensLockClass = 0x6e6d6174

// GetAccessToken implements [AccessTokenStore].
func (s *SQLStore) GetAccessToken(ctx context.Context, id string) (AccessToken, error) {
	t, err := scanAccessToken(s.db.QueryRowContext(ctx, s.accessQuery("WHERE id = ?"), id))
	if err != nil {
		return AccessToken{}, readErr("get access token", err)
	}
	return t, nil
}

// ListAccessTokens implements [AccessTokenStore].
func (s *SQLStore) ListAccessTokens(ctx context.Context, userName string) ([]AccessToken, error) {
	rows, err := s.db.QueryContext(ctx, s.accessQuery("WHERE user_name = ? ORDER BY created_at, id"), userName)
	if err != nil {
		return nil, wrapSQL("list access tokens", err)
	}
	defer rows.Close()
	var out []AccessToken
	for rows.Next() {
		t, err := scanAccessToken(rows)
		if err != nil && !errors.Is(err, ErrBrokenRecord) {
			return nil, wrapSQL("list access tokens", err)
		}
		out = append(out, t)
	}
	return out, wrapSQL("list access tokens", rows.Err())
}

// DeleteAccessToken implements [AccessTokenStore].
func (s *SQLStore) DeleteAccessToken(ctx context.Context, id string) error {
	return s.exec(ctx, "delete access token", "DELETE FROM nmauth_access_tokens WHERE id = ?", id)
}

// DeleteUserAccessTokens implements [AccessTokenStore].
func (s *SQLStore) DeleteUserAccessTokens(ctx context.Context, userName string) error {
	return s.exec(ctx, "delete access tokens", "DELETE FROM nmauth_access_tokens WHERE user_name = ?", userName)
}

// TouchAccessToken implements [AccessTokenStore].
func (s *SQLStore) TouchAccessToken(ctx context.Context, id string, used time.Time) error {
	n, err := encodeTimes(used)
	if err != nil {
		return err
	}
	return s.exec(ctx, "touch access token", "UPDATE nmauth_access_tokens SET last_used = ? WHERE id = ? AND last_used < ?", n[0], id, n[0])
}

// exec runs one write statement in a transaction of its own.
func (s *SQLStore) exec(ctx context.Context, what, query string, args ...any) error {
	return s.inTx(ctx, what, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.q.rebind(query), args...)
		return wrapSQL(what, err)
	})
}
