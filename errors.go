package nmauth

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors returned by the [Authenticator]. Check them with
// [errors.Is]; the HTTP handler maps each to one status in one place.
var (
	// ErrInvalidCredentials is returned for an unknown user or host, a
	// wrong password and a disabled account alike.
	ErrInvalidCredentials = errors.New("nmauth: invalid credentials")
	// ErrUnauthenticated is returned when a request carries no usable
	// bearer credential.
	ErrUnauthenticated = errors.New("nmauth: unauthenticated")
	// ErrForbidden is returned when the bearer is valid but may not act on
	// the named user.
	ErrForbidden = errors.New("nmauth: forbidden")
	// ErrInvalidCode is returned by verification for a wrong, reused or
	// out-of-window TOTP or recovery code.
	ErrInvalidCode = errors.New("nmauth: invalid code")
	// ErrMalformedCode is returned when a code is neither six digits nor
	// a recovery code; nothing is counted against the user.
	ErrMalformedCode = errors.New("nmauth: malformed code")
	// ErrInvalidEnrollment is returned by complete-totp for a tampered,
	// expired or foreign enrollment, or a wrong first code.
	ErrInvalidEnrollment = errors.New("nmauth: invalid enrollment")
	// ErrThrottled is matched by a [*ThrottledError].
	ErrThrottled = errors.New("nmauth: too many attempts")
	// ErrOverloaded is returned when the password hashing queue is full.
	ErrOverloaded = errors.New("nmauth: overloaded")
	// ErrInvalidUsername is returned for a name PRECIS refuses.
	ErrInvalidUsername = errors.New("nmauth: invalid username")
	// ErrInvalidPassword is returned for a password PRECIS refuses or that
	// is too short or too long.
	ErrInvalidPassword = errors.New("nmauth: invalid password")
	// ErrInvalidHost is returned for a malformed host id or MAC address.
	ErrInvalidHost = errors.New("nmauth: invalid host")
	// ErrUnknownHost is returned by host and node login for a host id the
	// Store does not hold. It matches [ErrInvalidCredentials], so a caller
	// that does not tell them apart answers both alike.
	ErrUnknownHost = fmt.Errorf("%w: unknown host", ErrInvalidCredentials)
	// ErrInvalidNetwork is returned for a malformed network name.
	ErrInvalidNetwork = errors.New("nmauth: invalid network")
	// ErrStoreUnavailable is returned when the Store fails or does not
	// answer within [Config.StoreTimeout]: a fault of the server, never of
	// the credential, so the client should try again later.
	ErrStoreUnavailable = errors.New("nmauth: store unavailable")
	// ErrDataFault is returned when stored data cannot be used: a
	// malformed password hash, a TOTP secret that will not open. The
	// account is named in the error log, never its data.
	ErrDataFault = errors.New("nmauth: stored data unusable")
	// ErrSecretMismatch is returned by [Authenticator.CheckSecrets] when the
	// Store holds accounts written under root secrets none of which is
	// configured.
	ErrSecretMismatch = errors.New("nmauth: the store was written under another root secret")
)

// ThrottledError is returned when an account or client must wait before
// trying again. It matches [ErrThrottled] with [errors.Is].
type ThrottledError struct {
	// RetryAfter is how long until the next attempt is allowed.
	RetryAfter time.Duration
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("nmauth: too many attempts, retry after %s", e.RetryAfter.Round(time.Second))
}

// Is reports whether target is [ErrThrottled].
func (e *ThrottledError) Is(target error) bool { return target == ErrThrottled }

// OverloadedError is returned when the password hashing queue is full. It
// matches [ErrOverloaded] with [errors.Is].
type OverloadedError struct {
	RetryAfter time.Duration
}

func (e *OverloadedError) Error() string { return "nmauth: overloaded" }

// Is reports whether target is [ErrOverloaded].
func (e *OverloadedError) Is(target error) bool { return target == ErrOverloaded }
