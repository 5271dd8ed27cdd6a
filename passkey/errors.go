package passkey

import (
	"errors"
	"net/http"
	"time"
)

// Sentinel errors of a [Manager]. Check them with [errors.Is]; the handler
// maps each to one status in [errorStatus], and every other error (those
// of [nmauth]) as the Authenticator maps it.
var (
	// ErrChallenge is a challenge that is unknown, used already, expired,
	// or made for another ceremony or another user. Nothing is counted
	// against the user: the ceremony starts again.
	ErrChallenge = errors.New("passkey: invalid or expired challenge")
	// ErrAssertion is an assertion that fails verification: its signature,
	// origin, relying party, user presence or user verification, or a
	// passkey the user does not have.
	ErrAssertion = errors.New("passkey: assertion refused")
	// ErrSignCount is an assertion whose signature counter is not above
	// the stored one: a sign of a cloned authenticator. It is reported as
	// [EventSignCountRegressed].
	ErrSignCount = errors.New("passkey: sign count went backwards")
	// ErrRegistration is a new passkey whose attestation fails
	// verification: its challenge, origin, relying party, user presence or
	// verification, or its algorithm.
	ErrRegistration = errors.New("passkey: registration refused")
	// ErrMalformed is a body that is no WebAuthn credential.
	ErrMalformed = errors.New("passkey: malformed credential")
	// ErrName is a passkey name that is empty, too long or not printable.
	ErrName = errors.New("passkey: invalid passkey name")
	// ErrNoPasskey is a passkey the user does not have, or a second factor
	// asked of a user who has none.
	ErrNoPasskey = errors.New("passkey: no such passkey")
	// ErrTooMany is a registration past [Config.MaxPasskeys].
	ErrTooMany = errors.New("passkey: too many passkeys")
	// ErrDuplicate is a registration of a passkey the user has already.
	ErrDuplicate = errors.New("passkey: passkey registered already")
	// ErrPasswordlessOff is a passwordless login asked of a Manager
	// without [Config.Passwordless].
	ErrPasswordlessOff = errors.New("passkey: passwordless login is off")
	// ErrPresence is a change that needs a recent proof of presence, a
	// login that passed a second factor within [Config.PresenceWindow],
	// made without one: adding a passkey to an account that has a second
	// factor, or removing the last one.
	ErrPresence = errors.New("passkey: a recent second-factor login is needed")
	// ErrChallengesFull is a ceremony begun while the Store holds
	// [Config.MaxChallenges] live challenges of its flow already: 503 with
	// Retry-After, until some are finished or expire.
	ErrChallengesFull = errors.New("passkey: too many ceremonies under way")
)

// fullRetryAfter is the Retry-After of [ErrChallengesFull]: a challenge
// leaves when its ceremony ends, mostly within seconds, or when it
// expires.
const fullRetryAfter = 10 * time.Second

// errorStatus maps this package's errors to a status and the only text a
// client sees; ok is false for any other error.
func errorStatus(err error) (status int, message string, ok bool) {
	switch {
	case errors.Is(err, ErrChallenge):
		return http.StatusBadRequest, "invalid, used or expired passkey challenge: start again", true
	case errors.Is(err, ErrSignCount):
		return http.StatusUnauthorized, "passkey refused: its sign count went backwards, so the authenticator may be cloned", true
	case errors.Is(err, ErrAssertion):
		return http.StatusUnauthorized, "passkey refused", true
	case errors.Is(err, ErrRegistration):
		return http.StatusBadRequest, "passkey registration refused", true
	case errors.Is(err, ErrMalformed):
		return http.StatusBadRequest, "malformed passkey credential", true
	case errors.Is(err, ErrName):
		return http.StatusBadRequest, "a passkey name is 1 to 64 printable characters", true
	case errors.Is(err, ErrNoPasskey):
		return http.StatusNotFound, "no such passkey", true
	case errors.Is(err, ErrTooMany):
		return http.StatusConflict, "too many passkeys: remove one first", true
	case errors.Is(err, ErrDuplicate):
		return http.StatusConflict, "this passkey is registered already", true
	case errors.Is(err, ErrPasswordlessOff):
		return http.StatusNotFound, "passwordless login is off", true
	case errors.Is(err, ErrPresence):
		return http.StatusForbidden, "log in again with your second factor first", true
	case errors.Is(err, ErrChallengesFull):
		return http.StatusServiceUnavailable, "too many passkey logins under way, try again later", true
	}
	return 0, "", false
}
