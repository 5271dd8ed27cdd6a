// Package attempt holds the attempt limits of password logins (users,
// hosts and nodes alike) and the one backoff formula of password and TOTP
// attempts. It reads and writes only the [state.Account] of a record, the
// failures it counts per account and per client address, and knows
// nothing of logins beyond the client key its caller names.
//
// Failures are counted per client address against each account: from one
// address the first ClientFreeFailures consecutive failures are free,
// then each further attempt waits 1 s doubling up to a minute (see
// [Backoff]). Other addresses are not slowed by it, so an attacker
// hammering an account from one address cannot lock its owner out.
//
// Failures from all addresses add up to the account's count. After
// AccountCeiling consecutive failures (NIST SP 800-63B allows up to 100),
// each further attempt waits 1 s doubling up to 15 minutes, for every
// address that has never logged in to it. An address that has is
// "known": only its own backoff applies to it.
package attempt

import (
	"slices"
	"time"

	"github.com/nmauth/nmauth/internal/state"
)

// The attempt limits; see the package doc.
const (
	ClientFreeFailures = 5
	clientMaxDelay     = time.Minute
	AccountCeiling     = 100
	accountMaxDelay    = 15 * time.Minute
	// MaxClients bounds the addresses kept per account; past it the
	// least recently seen unknown address is forgotten first.
	MaxClients = 32
)

// passwordDelay is the backoff of one client address after n consecutive
// failures against one account.
func passwordDelay(n int) time.Duration { return Backoff(n, ClientFreeFailures, clientMaxDelay) }

// accountDelay is the account-wide backoff after n consecutive failures
// from every address.
func accountDelay(n int) time.Duration { return Backoff(n, AccountCeiling, accountMaxDelay) }

// Backoff is the one backoff formula of password and TOTP attempts: after
// n consecutive failures, none while n is below free, then 1 s doubling
// with each further failure up to ceiling. So free failures can be made
// without waiting, and the attempt after them waits 1 s.
func Backoff(n, free int, ceiling time.Duration) time.Duration {
	if n < free {
		return 0
	}
	// 2^30 s is past any ceiling; the bound keeps the shift from
	// overflowing however large n grows.
	return min(time.Second<<min(n-free, 30), ceiling)
}

// AddDelay is the end of a backoff of d from now: the zero time when there
// is none.
func AddDelay(now time.Time, d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return now.Add(d)
}

// Take checks the backoff that applies to client and, if there is none,
// counts the attempt as a failure of acc before its password is checked.
// It returns how long the client must wait, or 0 when the attempt is
// taken.
func Take(acc *state.Account, client string, now time.Time) time.Duration {
	if wait := Wait(acc, client, now); wait > 0 {
		return wait
	}
	c := Entry(&acc.PasswordClients, client)
	c.Failures++
	c.BlockedUntil = AddDelay(now, passwordDelay(c.Failures))
	acc.PasswordFailures++
	if d := accountDelay(acc.PasswordFailures); d > 0 {
		acc.PasswordBlockedUntil = now.Add(d)
	}
	return 0
}

// Wait is how long client must wait before its next attempt at acc: its
// own backoff, and the account's unless the client is known to it. It
// changes nothing.
func Wait(acc *state.Account, client string, now time.Time) time.Duration {
	var wait time.Duration
	known := false
	if i := slices.IndexFunc(acc.PasswordClients, func(c state.Client) bool { return c.Client == client }); i >= 0 {
		c := acc.PasswordClients[i]
		wait, known = c.BlockedUntil.Sub(now), c.Known
	}
	if !known {
		wait = max(wait, acc.PasswordBlockedUntil.Sub(now))
	}
	return wait
}

// GrantChanges reports whether [Grant] would change acc: whether it has
// failures to forget, or client is not yet known to it.
func GrantChanges(acc *state.Account, client string) bool {
	if acc.PasswordFailures != 0 || !acc.PasswordBlockedUntil.IsZero() {
		return true
	}
	i := slices.IndexFunc(acc.PasswordClients, func(c state.Client) bool { return c.Client == client })
	return i < 0 || acc.PasswordClients[i] != state.Client{Client: client, Known: true}
}

// Grant undoes the counting of a login that succeeded and marks its
// client as known to acc.
func Grant(acc *state.Account, client string) {
	c := Entry(&acc.PasswordClients, client)
	c.Failures, c.BlockedUntil, c.Known = 0, time.Time{}, true
	acc.PasswordFailures, acc.PasswordBlockedUntil = 0, time.Time{}
}

// Reset forgets every failure of acc, after an administrator set a new
// password.
func Reset(acc *state.Account) {
	acc.PasswordFailures, acc.PasswordBlockedUntil, acc.PasswordClients = 0, time.Time{}, nil
}

// Entry returns client's entry, adding one if needed. Past MaxClients it
// forgets the oldest unknown address, or if every address is known, the
// oldest one: an attacker who rotates addresses can push out other
// unknown addresses, never the owner's known ones.
func Entry(clients *[]state.Client, client string) *state.Client {
	if i := slices.IndexFunc(*clients, func(c state.Client) bool { return c.Client == client }); i >= 0 {
		return &(*clients)[i]
	}
	if len(*clients) >= MaxClients {
		drop := max(slices.IndexFunc(*clients, func(c state.Client) bool { return !c.Known }), 0)
		*clients = slices.Delete(*clients, drop, drop+1)
	}
	*clients = append(*clients, state.Client{Client: client})
	return &(*clients)[len(*clients)-1]
}

// Known reports whether client has logged in to the account whose
// clients are clients.
func Known(clients []state.Client, client string) bool {
	return slices.ContainsFunc(clients, func(c state.Client) bool { return c.Known && c.Client == client })
}

// The backoff of wrong TOTP codes for one user, across all pre-auth tokens
// and replicas: the first TOTPFreeFailures consecutive failures are free,
// then each further attempt waits 1 s doubling up to 15 minutes (see
// [Backoff]). At that cap an attacker who knows the password gets 96
// guesses a day; with at most 3 of 10^6 codes valid at any time the
// expected time to break the second factor is over 9 years. A pre-auth
// token survives MaxTOTPFailuresPerToken wrong codes.
const (
	TOTPFreeFailures        = 5
	totpMaxDelay            = 15 * time.Minute
	MaxTOTPFailuresPerToken = 5
)

// TOTPDelay is the backoff after n consecutive wrong codes for one user.
func TOTPDelay(n int) time.Duration { return Backoff(n, TOTPFreeFailures, totpMaxDelay) }

// ClearSecondFactor forgets u's wrong codes and its pre-auth token.
func ClearSecondFactor(u *state.User) {
	u.TOTPFailures, u.TOTPBlockedUntil = 0, time.Time{}
	u.PreAuthID, u.PreAuthFailures = "", 0
}

// SettleSecondFactor records the outcome of a second factor in u at now.
// One that passed consumes the pre-auth token and clears the failures; one
// that failed is counted against the token, which dies at
// MaxTOTPFailuresPerToken, and in the user's backoff.
func SettleSecondFactor(u *state.User, passed bool, now time.Time) {
	if passed {
		ClearSecondFactor(u)
		return
	}
	u.TOTPFailures++
	u.PreAuthFailures++
	if u.PreAuthFailures >= MaxTOTPFailuresPerToken {
		u.PreAuthID, u.PreAuthFailures = "", 0
	}
	u.TOTPBlockedUntil = AddDelay(now, TOTPDelay(u.TOTPFailures))
}
