// This file holds the SQLStore's users: the Store methods on
// nmauth_users and the encoding of a User to its row and back.

package nmauth

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/nmauth/nmauth/internal/sqlcol"
)

// GetUser implements [Store].
func (s *SQLStore) GetUser(ctx context.Context, name string) (User, error) {
	u, err := scanUser(s.getUser.QueryRowContext(ctx, name))
	if err != nil {
		return User{}, readErr("get user", err)
	}
	return u, nil
}

// ListUsers implements [Store] with one keyset query: the page starts
// after the last key of the one before, found in the key's index, so every
// page costs the same however deep into the table it is.
func (s *SQLStore) ListUsers(ctx context.Context, after string, limit int) ([]User, error) {
	return listPage(ctx, s.db, "list users", s.q.listUsers, after, limit, scanUser)
}

// CreateUser implements [Store].
func (s *SQLStore) CreateUser(ctx context.Context, u User) error {
	args, err := userArgs(u)
	if err != nil {
		return err
	}
	return s.insert(ctx, "create user", s.q.insertUser, args)
}

// UpdateUser implements [Store]. It runs in one transaction that holds the
// row's write lock from the read to the commit.
func (s *SQLStore) UpdateUser(ctx context.Context, name string, fn func(*User) error) error {
	return s.inTx(ctx, "update user", func(tx *sql.Tx) error {
		u, err := scanUser(tx.QueryRowContext(ctx, s.q.lockUser, name))
		if errors.Is(err, sql.ErrNoRows) {
			return s.missWrite(ctx, tx, name)
		}
		if err != nil {
			return readErr("update user", err)
		}
		if err := fn(&u); err != nil {
			return err
		}
		args, err := userArgs(u)
		if err != nil {
			return err
		}
		// The key is left out of the SET list, so fn cannot move the record.
		_, err = tx.ExecContext(ctx, s.q.updateUser, append(args[1:], name)...)
		return wrapSQL("update user", err)
	})
}

// DeleteUser implements [Store].
func (s *SQLStore) DeleteUser(ctx context.Context, name string) error {
	return s.inTx(ctx, "delete user", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.q.deleteUser, name)
		return wrapSQL("delete user", err)
	})
}

// userArgs returns u's column values in the order of sqlUserColumns.
func userArgs(u User) ([]any, error) {
	codes, err := json.Marshal(u.RecoveryCodes)
	if err != nil {
		return nil, wrapSQL("encode recovery codes", err)
	}
	clients, err := encodeList(u.State.v.PasswordClients, "client failures")
	if err != nil {
		return nil, err
	}
	times, err := encodeTimes(u.State.v.TOTPBlockedUntil, u.State.v.PasswordBlockedUntil, u.CreatedAt)
	if err != nil {
		return nil, err
	}
	loggedOut, err := encodeList(u.State.v.LoggedOut, "logged-out tokens")
	if err != nil {
		return nil, err
	}
	var secret any // NULL unless there is a secret
	if len(u.TOTPSecret) > 0 {
		secret = u.TOTPSecret
	}
	return []any{
		u.Name, u.PasswordHash, u.Disabled,
		secret, u.State.v.TOTPLastStep, u.State.v.TOTPFailures, times[0],
		u.State.v.PreAuthID, u.State.v.PreAuthFailures, string(codes),
		u.State.v.PasswordFailures, times[1], clients,
		int64(u.State.v.Generation), times[2], loggedOut,
	}, nil
}

// scanUser reads a user's row. A column of the wrong type, or a JSON
// column that does not decode, is left at its zero value and named in
// the record's Broken, and the error is then a *BrokenRecordError for the
// first such column, returned with the record so that a listing can show
// it.
func scanUser(row sqlcol.RowScanner) (User, error) {
	c, err := sqlcol.ScanCells(row, len(sqlUserColumns))
	if err != nil {
		return User{}, err
	}
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
