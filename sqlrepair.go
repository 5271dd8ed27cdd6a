package nmauth

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

var _ RepairStore = (*SQLStore)(nil)

// sqlRepairKinds are the kinds of record a scan for broken records reads,
// in its order: users, then hosts, then access tokens.
var sqlRepairKinds = []string{"user", "host", "access token"}

var (
	// errNotRepairable is the reason a repair of a column the store does
	// not know fails.
	errNotRepairable = errors.New("not a column this store repairs")
	// errRepairPosition is the error of a scan from a position the store
	// did not return.
	errRepairPosition = errors.New("not a position of a scan for broken records")
	// errRepairLimit is the error of a scan of no records at a time.
	errRepairLimit = errors.New("a scan for broken records needs a positive limit")
)

// BrokenRecords implements [RepairStore]. A batch is one keyset page of
// one table, read as a listing reads it, so that the scan finds exactly
// the columns that reads find broken: every column of the wrong type, and
// every JSON column that does not decode. The position of the next batch
// is the kind of record and the last key read, as "kind:key"; "kind:"
// starts a table.
func (s *SQLStore) BrokenRecords(ctx context.Context, after string, limit int) ([]*BrokenRecordError, string, error) {
	kind, key, _ := strings.Cut(after, ":")
	if after == "" {
		kind = sqlRepairKinds[0]
	}
	if limit <= 0 {
		return nil, "", wrapSQL("broken records", errRepairLimit)
	}
	var (
		keys  []string
		found []*BrokenRecordError
		err   error
	)
	switch kind {
	case "user":
		keys, found, err = brokenInPage(ctx, s.db, s.q.listUsers, key, limit, scanUser, func(u User) string { return u.Name })
	case "host":
		keys, found, err = brokenInPage(ctx, s.db, s.q.listHosts, key, limit, scanHost, func(h Host) string { return h.ID })
	case "access token":
		keys, found, err = brokenInPage(ctx, s.db, s.accessQuery("WHERE id > ? ORDER BY id LIMIT ?"), key, limit, scanAccessToken, func(t AccessToken) string { return t.ID })
	default:
		return nil, "", wrapSQL("broken records", fmt.Errorf("%w: %q", errRepairPosition, after))
	}
	if err != nil {
		return nil, "", wrapSQL("broken records", err)
	}
	if len(keys) == limit {
		return found, kind + ":" + keys[len(keys)-1], nil
	}
	// This table is done: the next batch starts the next one, or the
	// scan is over.
	if i := slices.Index(sqlRepairKinds, kind); i+1 < len(sqlRepairKinds) {
		return found, sqlRepairKinds[i+1] + ":", nil
	}
	return found, "", nil
}

// brokenInPage reads the page of query after the key after and returns the
// keys it read and the broken columns of its records.
func brokenInPage[T any](ctx context.Context, db *sql.DB, query, after string, limit int, scan func(rowScanner) (T, error), key func(T) string) ([]string, []*BrokenRecordError, error) {
	rows, err := db.QueryContext(ctx, query, after, limit)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var keys []string
	var found []*BrokenRecordError
	for rows.Next() {
		v, err := scan(rows)
		var b *BrokenRecordError
		switch {
		case errors.As(err, &b):
			found = append(found, brokenColumns(err)...)
		case err != nil:
			return nil, nil, err
		}
		keys = append(keys, key(v))
	}
	return keys, found, rows.Err()
}

// brokenColumns returns the error of each broken column of the record
// whose scan returned err.
func brokenColumns(err error) []*BrokenRecordError {
	var b *brokenRowError
	if errors.As(err, &b) {
		return b.all
	}
	var one *BrokenRecordError
	if errors.As(err, &one) {
		return []*BrokenRecordError{one}
	}
	return nil
}

// sqlRepair is the statement that makes one column of one kind of record
// safe, and its arguments but the key, which comes last.
type sqlRepair struct {
	query string
	args  func() []any
}

// sqlRepairs are the repairs of the columns the store can find broken,
// by kind and column. Each leaves the record granting nothing the damaged
// value might have withheld:
//
//   - A broken disabled flag, password hash, MAC address or TOTP secret
//     disables the account (a user without the secret would log in with a
//     password alone; a host without its MAC address from any machine):
//     an administrator enables it again once it has a password, a MAC
//     address or a second factor that can be read. A broken password
//     hash is replaced by one that no password matches.
//   - A broken generation, or list of logged-out tokens, is replaced by a
//     new random generation, so every token of the account dies, those the
//     list revoked among them.
//   - A broken last TOTP step moves to the latest step a code may be
//     checked against now, so no code already seen is accepted again.
//   - A broken pre-auth id is cleared, so no pre-auth token is redeemed.
//   - Broken failure counts, backoffs and client failures are forgotten,
//     as a successful login forgets them; broken recovery codes are gone
//     and must be made again; a broken creation time becomes unknown.
//
// An access token with any broken column is deleted: an unreadable scope
// must never be widened, and the user can make a new one.
var sqlRepairs = map[string]map[string]sqlRepair{
	"user": {
		"password_hash":          {"UPDATE nmauth_users SET password_hash = ?, disabled = ? WHERE name = ?", lockedPassword},
		"disabled":               {"UPDATE nmauth_users SET disabled = ? WHERE name = ?", disable},
		"totp_secret":            {"UPDATE nmauth_users SET totp_secret = NULL, disabled = ? WHERE name = ?", disable},
		"totp_last_step":         {"UPDATE nmauth_users SET totp_last_step = ? WHERE name = ?", latestTOTPStep},
		"totp_failures":          {"UPDATE nmauth_users SET totp_failures = 0 WHERE name = ?", nil},
		"totp_blocked_until":     {"UPDATE nmauth_users SET totp_blocked_until = 0 WHERE name = ?", nil},
		"preauth_id":             {"UPDATE nmauth_users SET preauth_id = '' WHERE name = ?", nil},
		"preauth_failures":       {"UPDATE nmauth_users SET preauth_failures = 0 WHERE name = ?", nil},
		"recovery_codes":         {"UPDATE nmauth_users SET recovery_codes = '[]' WHERE name = ?", nil},
		"password_failures":      {"UPDATE nmauth_users SET password_failures = 0 WHERE name = ?", nil},
		"password_blocked_until": {"UPDATE nmauth_users SET password_blocked_until = 0 WHERE name = ?", nil},
		"password_clients":       {"UPDATE nmauth_users SET password_clients = '[]' WHERE name = ?", nil},
		"generation":             {"UPDATE nmauth_users SET generation = ? WHERE name = ?", newRandomGeneration},
		"created_at":             {"UPDATE nmauth_users SET created_at = 0 WHERE name = ?", nil},
		"logged_out":             {"UPDATE nmauth_users SET logged_out = '[]', generation = ? WHERE name = ?", newRandomGeneration},
	},
	"host": {
		"mac_address":            {"UPDATE nmauth_hosts SET mac_address = '', disabled = ? WHERE id = ?", disable},
		"password_hash":          {"UPDATE nmauth_hosts SET password_hash = ?, disabled = ? WHERE id = ?", lockedPassword},
		"disabled":               {"UPDATE nmauth_hosts SET disabled = ? WHERE id = ?", disable},
		"password_failures":      {"UPDATE nmauth_hosts SET password_failures = 0 WHERE id = ?", nil},
		"password_blocked_until": {"UPDATE nmauth_hosts SET password_blocked_until = 0 WHERE id = ?", nil},
		"password_clients":       {"UPDATE nmauth_hosts SET password_clients = '[]' WHERE id = ?", nil},
		"generation":             {"UPDATE nmauth_hosts SET generation = ? WHERE id = ?", newRandomGeneration},
		"created_at":             {"UPDATE nmauth_hosts SET created_at = 0 WHERE id = ?", nil},
	},
}

func disable() []any { return []any{true} }

// lockedPassword disables the account and gives it a hash of random bytes,
// as the dummy hash is made: no password matches it, and a login still
// costs what any other does, until an administrator sets a password.
func lockedPassword() []any {
	buf := make([]byte, argonSaltLen+argonKeyLen)
	_, _ = rand.Read(buf) // crypto/rand.Read never fails
	return []any{encodeArgonHash(argonHash{
		Params: currentArgonParams(),
		Salt:   buf[:argonSaltLen],
		Key:    buf[argonSaltLen:],
	}), true}
}

// latestTOTPStep is the latest step a code is checked against now (see
// otpauth.Match).
func latestTOTPStep() []any { return []any{time.Now().Unix()/totpPeriod + 1} }

// newRandomGeneration is a generation no token carries.
func newRandomGeneration() []any {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return []any{int64(binary.BigEndian.Uint64(b[:]))}
}

// RepairRecord implements [RepairStore]. The record is read again under
// its row's lock, so a column repaired or rewritten since b was found is
// left alone.
func (s *SQLStore) RepairRecord(ctx context.Context, b *BrokenRecordError) error {
	forUpdate := ""
	if s.dialect == DialectPostgres {
		forUpdate = " FOR UPDATE"
	}
	var (
		lock   string
		scan   func(rowScanner) ([]string, error)
		repair sqlRepair
		ok     bool
	)
	switch b.Kind {
	case "user":
		lock, scan = s.q.lockUser, brokenOf(scanUser, func(u User) []string { return u.Broken })
		repair, ok = sqlRepairs[b.Kind][b.Column]
	case "host":
		lock, scan = s.q.lockHost, brokenOf(scanHost, func(h Host) []string { return h.Broken })
		repair, ok = sqlRepairs[b.Kind][b.Column]
	case "access token":
		lock, scan = s.accessQuery("WHERE id = ?")+forUpdate, brokenOf(scanAccessToken, func(t AccessToken) []string { return t.Broken })
		repair, ok = sqlRepair{query: "DELETE FROM nmauth_access_tokens WHERE id = ?"}, slices.Contains(sqlAccessColumns[1:], b.Column)
	}
	if !ok {
		return wrapSQL("repair record", &BrokenRecordError{Kind: b.Kind, Key: b.Key, Column: b.Column, Err: errNotRepairable})
	}
	return s.inTx(ctx, "repair record", func(tx *sql.Tx) error {
		broken, err := scan(tx.QueryRowContext(ctx, lock, b.Key))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return wrapSQL("repair record", err)
		case !slices.Contains(broken, b.Column):
			return nil
		}
		var args []any
		if repair.args != nil {
			args = repair.args()
		}
		_, err = tx.ExecContext(ctx, s.q.rebind(repair.query), append(args, b.Key)...)
		return wrapSQL("repair record", err)
	})
}

// brokenOf turns a scan of a record into a scan of the names of its
// broken columns; a broken record is not an error here.
func brokenOf[T any](scan func(rowScanner) (T, error), broken func(T) []string) func(rowScanner) ([]string, error) {
	return func(row rowScanner) ([]string, error) {
		v, err := scan(row)
		if err != nil && !errors.Is(err, ErrBrokenRecord) {
			return nil, err
		}
		return broken(v), nil
	}
}
