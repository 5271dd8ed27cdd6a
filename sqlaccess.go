// This file holds the SQLStore's access tokens and their mapping to rows.

package nmauth

import (
	"context"
	"database/sql"
	"time"

	"github.com/nmauth/nmauth/internal/sqlcol"
	"github.com/nmauth/nmauth/internal/sqldb"
)

// sqlAccessTokens is nmauth_access_tokens; accessArgs and scanAccessToken
// follow the order of its columns.
var sqlAccessTokens = sqldb.Table[AccessToken]{
	Name: "nmauth_access_tokens", Noun: "access token",
	Columns: []string{
		"id", "user_name", "name", "digest", "read_only", "networks",
		"generation", "created_by", "created_at", "expires_at", "last_used",
	},
	Bind: accessArgs, Scan: scanAccessToken, Key: func(t AccessToken) string { return t.ID },
	// Only a scan for broken records pages the tokens, whose id has
	// no index in byte order.
	Collated: true,
}

func accessArgs(t AccessToken) ([]any, error) {
	var e sqlcol.Encoder
	networks := sqlcol.EncodeListTo(&e, t.Networks, "networks")
	times := e.Times(t.CreatedAt, t.ExpiresAt, t.LastUsed)
	if e.Err != nil {
		return nil, e.Err
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
func scanAccessToken(c []sqlcol.Cell) (AccessToken, error) {
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
	// args[6] and args[8] are t's generation and creation time, as stored.
	gen, made := args[6], args[8]
	return s.db.InTx(ctx, what, func(tx *sql.Tx) error {
		// Creations for one user take turns from here to the commit, so
		// that the count holds until the insert: SQLite's transaction
		// holds the write lock from its start; PostgreSQL's takes a lock
		// of the user's name, whether or not the user's row exists.
		if s.db.Postgres {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1, hashtext($2))", accessTokensLockClass, t.UserName); err != nil {
				return sqldb.Wrap(what, err)
			}
		}
		// The user's dead tokens (revoked by a move of the generation, or
		// expired) go, so that they neither count nor stay listed.
		if _, err := tx.ExecContext(ctx, s.db.Rebind("DELETE FROM nmauth_access_tokens WHERE user_name = ? AND (generation <> ? OR expires_at <= ?)"), t.UserName, gen, made); err != nil {
			return sqldb.Wrap(what, err)
		}
		var held int
		if err := tx.QueryRowContext(ctx, s.db.Rebind("SELECT count(*) FROM nmauth_access_tokens WHERE user_name = ?"), t.UserName).Scan(&held); err != nil {
			return sqldb.Wrap(what, err)
		}
		if held >= max {
			return ErrTooManyAccessTokens
		}
		return s.tokens.InsertIn(ctx, tx, what, args)
	})
}

// accessTokensLockClass is the first key of the PostgreSQL advisory lock
// that access-token creations for one user take, "nmat" in ASCII; the
// second is a hash of the user's name.
const accessTokensLockClass = 0x6e6d6174

// GetAccessToken implements [AccessTokenStore].
func (s *SQLStore) GetAccessToken(ctx context.Context, id string) (AccessToken, error) {
	return s.tokens.Get(ctx, id)
}

// ListAccessTokens implements [AccessTokenStore].
func (s *SQLStore) ListAccessTokens(ctx context.Context, userName string) ([]AccessToken, error) {
	return s.tokens.List(ctx, nil, s.tokens.Select("WHERE user_name = ? ORDER BY created_at, id"), userName)
}

// DeleteAccessToken implements [AccessTokenStore].
func (s *SQLStore) DeleteAccessToken(ctx context.Context, id string) error {
	return s.tokens.Delete(ctx, id)
}

// DeleteUserAccessTokens implements [AccessTokenStore].
func (s *SQLStore) DeleteUserAccessTokens(ctx context.Context, userName string) error {
	return s.db.Exec(ctx, "delete access tokens", "DELETE FROM nmauth_access_tokens WHERE user_name = ?", userName)
}

// TouchAccessToken implements [AccessTokenStore].
func (s *SQLStore) TouchAccessToken(ctx context.Context, id string, used time.Time) error {
	n, err := sqlcol.EncodeTimes(used)
	if err != nil {
		return err
	}
	return s.db.Exec(ctx, "touch access token", "UPDATE nmauth_access_tokens SET last_used = ? WHERE id = ? AND last_used < ?", n[0], id, n[0])
}
