// Package state holds what nmauth keeps of an account from one call to the
// next, behind the opaque [nmauth.State] of a user's or a host's record:
// the root package reads and writes these fields, a Store keeps them in
// their text form, and the tests in this repository read them through
// [Of] and set them through [Put].
package state

import (
	"encoding"
	"encoding/json"
	"time"
)

// Account is the state that users and hosts alike keep: their password
// attempts and their revocation generation.
type Account struct {
	// PasswordFailures counts consecutive password attempts that did not
	// succeed, from every client: an attempt is counted before its password
	// is checked (a machine secret's after) and the count resets when one
	// succeeds.
	PasswordFailures int `json:"pf,omitempty"`
	// PasswordBlockedUntil is the end of the account-wide backoff, which
	// starts only past the account's ceiling of failures.
	PasswordBlockedUntil time.Time `json:"pb,omitzero"`
	// PasswordClients counts the failures per client address, oldest
	// first.
	PasswordClients []Client `json:"pc,omitempty"`

	// Generation is the account's revocation counter: every token carries
	// the generation it was minted under and dies when the counter moves.
	// It starts at a random value, so a re-created account never matches
	// the tokens of a deleted one.
	Generation uint64 `json:"g,omitempty"`
}

// LockedUntil is the latest end among the account's backoffs, its
// account-wide one, those of each client address and the others given, or
// the zero time when none lasts beyond now.
func (a *Account) LockedUntil(now time.Time, others ...time.Time) time.Time {
	last := a.PasswordBlockedUntil
	for _, t := range others {
		if t.After(last) {
			last = t
		}
	}
	for _, c := range a.PasswordClients {
		if c.BlockedUntil.After(last) {
			last = c.BlockedUntil
		}
	}
	if !last.After(now) {
		return time.Time{}
	}
	return last
}

// User is the state of a user: its account's, its TOTP replay and
// attempt state, and the tokens its logouts revoked. A host's state is
// its Account alone.
type User struct {
	Account

	// TOTPLastStep is the last accepted 30-second step: a code is accepted
	// only for a later step, so no code is ever used twice.
	TOTPLastStep int64 `json:"ts,omitempty"`
	// TOTPFailures counts consecutive wrong codes across all pre-auth
	// tokens; it drives the backoff and resets on a correct code.
	TOTPFailures int `json:"tf,omitempty"`
	// TOTPBlockedUntil is the end of the current TOTP backoff.
	TOTPBlockedUntil time.Time `json:"tb,omitzero"`
	// PreAuthID is the jti of the one pre-auth token that may still be
	// redeemed; a new login replaces it and a correct code consumes it.
	PreAuthID string `json:"pa,omitempty"`
	// PreAuthFailures counts wrong codes sent with PreAuthID.
	PreAuthFailures int `json:"paf,omitempty"`
	// LoggedOut holds the user tokens revoked by a logout until they
	// would have expired.
	LoggedOut []LoggedOut `json:"lo,omitempty"`
}

// LoggedOut is one user token revoked by a logout.
type LoggedOut struct {
	// ID is the token's jti.
	ID string `json:"i"`
	// Until is when the token expires; past it the entry can go.
	Until time.Time `json:"u"`
}

// Client is the attempt count of one client address (an IPv4 address or
// an IPv6 /64) against one account.
type Client struct {
	// Client is the address or prefix in text form; "" when the caller
	// gave no address.
	Client string `json:"c"`
	// Failures counts consecutive attempts from Client that did not
	// succeed.
	Failures int `json:"f"`
	// BlockedUntil is the end of Client's backoff.
	BlockedUntil time.Time `json:"b"`
	// Known marks a client that has logged in to the account: the
	// account-wide backoff never applies to it.
	Known bool `json:"k,omitempty"`
}

// Of returns the state that s, an [nmauth.State], holds: a copy, which
// changes nothing in s. It panics if s cannot be read, which is a bug in
// a test.
func Of(s encoding.TextMarshaler) User {
	b, err := s.MarshalText()
	if err != nil {
		panic(err)
	}
	var u User
	if err := json.Unmarshal(b, &u); err != nil {
		panic(err)
	}
	return u
}

// Put sets s, an *[nmauth.State], to hold u. It panics if s refuses u,
// which is a bug in a test.
func Put(s encoding.TextUnmarshaler, u User) {
	b, err := json.Marshal(u)
	if err != nil {
		panic(err)
	}
	if err := s.UnmarshalText(b); err != nil {
		panic(err)
	}
}

// Edit changes the state s, an *[nmauth.State], holds through fn.
func Edit(s interface {
	encoding.TextMarshaler
	encoding.TextUnmarshaler
}, fn func(*User)) {
	u := Of(s)
	fn(&u)
	Put(s, u)
}

// New returns the [nmauth.State] (T) that holds u, for a record's
// literal: state.New[nmauth.State](state.User{...}).
func New[T any, P interface {
	*T
	encoding.TextUnmarshaler
}](u User) T {
	var s T
	Put(P(&s), u)
	return s
}
