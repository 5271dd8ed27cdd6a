// This file holds the SQLStore's users: the Store methods on
// nmauth_users and the mapping of a User to its row and back.

package nmauth

import (
	"context"

	"github.com/nmauth/nmauth/internal/sqlcol"
	"github.com/nmauth/nmauth/internal/sqldb"
)

// sqlUsers is nmauth_users; userArgs and scanUser follow the order of its
// columns.
var sqlUsers = sqldb.Table[User]{
	Name: "nmauth_users", Noun: "user",
	Columns: []string{
		"name", "password_hash", "disabled",
		"totp_secret", "totp_last_step", "totp_failures", "totp_blocked_until",
		"preauth_id", "preauth_failures", "recovery_codes",
		"password_failures", "password_blocked_until", "password_clients",
		"generation", "created_at", "logged_out",
	},
	Bind: userArgs, Scan: scanUser, Key: func(u User) string { return u.Name },
}

// GetUser implements [Store].
func (s *SQLStore) GetUser(ctx context.Context, name string) (User, error) {
	return s.users.Get(ctx, name)
}

// ListUsers implements [Store] with one keyset query: the page starts
// after the last key of the one before, found in the key's index, so every
// page costs the same however deep into the table it is.
func (s *SQLStore) ListUsers(ctx context.Context, after string, limit int) ([]User, error) {
	return s.users.Page(ctx, after, limit)
}

// CreateUser implements [Store].
func (s *SQLStore) CreateUser(ctx context.Context, u User) error { return s.users.Create(ctx, u) }

// UpdateUser implements [Store]. It runs in one transaction that holds the
// row's write lock from the read to the commit.
func (s *SQLStore) UpdateUser(ctx context.Context, name string, fn func(*User) error) error {
	return s.users.Update(ctx, name, fn)
}

// DeleteUser implements [Store].
func (s *SQLStore) DeleteUser(ctx context.Context, name string) error {
	return s.users.Delete(ctx, name)
}

// userArgs returns u's column values in the order of sqlUsers.Columns.
func userArgs(u User) ([]any, error) {
	var e sqlcol.Encoder
	codes := sqlcol.EncodeNullableListTo(&e, u.RecoveryCodes, "recovery codes")
	clients := sqlcol.EncodeListTo(&e, u.State.v.PasswordClients, "client failures")
	times := e.Times(u.State.v.TOTPBlockedUntil, u.State.v.PasswordBlockedUntil, u.CreatedAt)
	loggedOut := sqlcol.EncodeListTo(&e, u.State.v.LoggedOut, "logged-out tokens")
	if e.Err != nil {
		return nil, e.Err
	}
	var secret any // NULL unless there is a secret
	if len(u.TOTPSecret) > 0 {
		secret = u.TOTPSecret
	}
	return []any{
		u.Name, u.PasswordHash, u.Disabled,
		secret, u.State.v.TOTPLastStep, u.State.v.TOTPFailures, times[0],
		u.State.v.PreAuthID, u.State.v.PreAuthFailures, codes,
		u.State.v.PasswordFailures, times[1], clients,
		int64(u.State.v.Generation), times[2], loggedOut,
	}, nil
}

// scanUser reads the cells of a user's row. A column of the wrong type, or a JSON
// column that does not decode, is left at its zero value and named in
// the record's Broken, and the error is then a *BrokenRecordError for the
// first such column, returned with the record so that a listing can show
// it.
func scanUser(c []sqlcol.Cell) (User, error) {
	var u User
	var d sqlcol.Decoder
	u.Name = d.KeyText(c[0])
	u.PasswordHash = d.Text("password_hash", c[1])
	u.Disabled = d.Boolean("disabled", c[2])
	u.TOTPSecret = d.Blob("totp_secret", c[3])
	u.State.v.TOTPLastStep = d.Integer("totp_last_step", c[4])
	u.State.v.TOTPFailures = d.Count("totp_failures", c[5])
	u.State.v.TOTPBlockedUntil = d.Time("totp_blocked_until", c[6])
	u.State.v.PreAuthID = d.Text("preauth_id", c[7])
	u.State.v.PreAuthFailures = d.Count("preauth_failures", c[8])
	sqlcol.DecodeNullableList(&d, "recovery_codes", c[9], &u.RecoveryCodes)
	u.State.v.PasswordFailures = d.Count("password_failures", c[10])
	u.State.v.PasswordBlockedUntil = d.Time("password_blocked_until", c[11])
	sqlcol.DecodeList(&d, "password_clients", c[12], &u.State.v.PasswordClients)
	u.State.v.Generation = uint64(d.Integer("generation", c[13]))
	u.CreatedAt = d.Time("created_at", c[14])
	sqlcol.DecodeList(&d, "logged_out", c[15], &u.State.v.LoggedOut)
	u.Broken = d.Broken
	return u, brokenErr("user", &d)
}
