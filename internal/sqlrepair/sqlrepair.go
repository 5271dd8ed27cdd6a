// Package sqlrepair holds the scan for the records that nmauth's SQLStore
// cannot decode, in batches of one page of one kind of record ([Scan]),
// and the repairs of their columns: for each kind of record and each
// column, the statement that resets the column to a safe value, and its
// arguments ([Table]). Which columns of a record are broken, and reading
// a record again under its lock before a repair, are the store's.
package sqlrepair

import (
	"crypto/rand"
	"encoding/binary"

	"github.com/nmauth/nmauth/internal/hashfmt"
)

// Repair is the statement that makes one column of one kind of record
// safe, and its arguments but the key, which comes last.
type Repair struct {
	Query string
	// Args returns the arguments; nil when the key is the only one.
	Args func() []any
}

// Table returns the repairs of the columns of users and hosts, by kind
// and column; latestTOTPStep is the latest TOTP step a code is checked
// against now. Each leaves the record granting nothing the damaged value
// might have withheld:
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
func Table(latestTOTPStep func() int64) map[string]map[string]Repair {
	latestStep := func() []any { return []any{latestTOTPStep()} }
	return map[string]map[string]Repair{
		"user": {
			"password_hash":          {"UPDATE nmauth_users SET password_hash = ?, disabled = ? WHERE name = ?", lockedPassword},
			"disabled":               {"UPDATE nmauth_users SET disabled = ? WHERE name = ?", disable},
			"totp_secret":            {"UPDATE nmauth_users SET totp_secret = NULL, disabled = ? WHERE name = ?", disable},
			"totp_last_step":         {"UPDATE nmauth_users SET totp_last_step = ? WHERE name = ?", latestStep},
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
}

func disable() []any { return []any{true} }

// lockedPassword disables the account and gives it a hash of random bytes,
// as the dummy hash is made: no password matches it, and a login still
// costs what any other does, until an administrator sets a password.
func lockedPassword() []any {
	buf := make([]byte, hashfmt.SaltLen+hashfmt.KeyLen)
	_, _ = rand.Read(buf) // crypto/rand.Read never fails
	return []any{hashfmt.Argon2idHash{
		Params: hashfmt.Current(),
		Salt:   buf[:hashfmt.SaltLen],
		Key:    buf[hashfmt.SaltLen:],
	}.Encode(), true}
}

// newRandomGeneration is a generation no token carries.
func newRandomGeneration() []any {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return []any{int64(binary.BigEndian.Uint64(b[:]))}
}
