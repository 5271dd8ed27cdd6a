package nmauth

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors, those the [Authenticator] returns and those a [Store]
// returns to it. Check them with [errors.Is]; the HTTP handler maps each
// to one status in one place.
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
	// ErrThrottled is the reason of a [*RetryError] for a client or an
	// account that made too many attempts: the fault of the caller, 429
	// over HTTP.
	ErrThrottled = errors.New("nmauth: too many attempts")
	// ErrOverloaded is the reason of a [*RetryError] for a full password
	// hashing queue: the server is busy, 503 over HTTP.
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
	// ErrNotFound is returned by a [Store] read or update when the record does
	// not exist.
	ErrNotFound = errors.New("nmauth: not found")
	// ErrExists is returned by [Store.CreateUser] and [Store.CreateHost] when a
	// record with the same key is already stored.
	ErrExists = errors.New("nmauth: already exists")
	// ErrBrokenRecord is matched by the error of a [Store] read or update of
	// a record that the Store holds but cannot decode (a [*BrokenRecordError]).
	// It matches [ErrDataFault] too: the fault is the record's, answered 500
	// and logged, never 503 (the Store answers) nor 401 (the credential may
	// be right).
	ErrBrokenRecord = fmt.Errorf("%w: broken record", ErrDataFault)
	// ErrNotRegistered is returned by the methods of an [Extension] that no
	// [Config.Extensions] of a successful [New] holds.
	ErrNotRegistered = errors.New("nmauth: extension not registered in Config.Extensions")
	// ErrInvalidImport is returned by [Admin.ImportUser] and
	// [Admin.ImportHost] for a record that cannot be imported as it
	// is: a password hash of no known format, a bad TOTP secret, both a hash
	// and a password. Nothing of such a record is stored. The error names
	// the reason, never a secret.
	ErrInvalidImport = errors.New("nmauth: record cannot be imported")
	// ErrInsecureMasterKey is returned when the master key is the default,
	// shorter than 32 characters, or weak ([ErrWeakMasterKey] wraps it),
	// and insecure keys are not allowed.
	ErrInsecureMasterKey = errors.New("nmauth: insecure master key")
	// ErrWeakMasterKey is returned when the master key is long enough but
	// does not read as random (see [NewMasterKey]) and insecure keys are
	// not allowed. It wraps [ErrInsecureMasterKey].
	ErrWeakMasterKey = fmt.Errorf("%w: it does not read as random", ErrInsecureMasterKey)
	// ErrRepairUnsupported is returned by [Admin.BrokenRecords] and
	// [Admin.RepairRecords] when the Store does not implement
	// [RepairStore].
	ErrRepairUnsupported = errors.New("nmauth: the store cannot look for broken records")
	// ErrAccessTokensOff is returned when the Store keeps no access
	// tokens (see [AccessTokenStore]); 501 over HTTP.
	ErrAccessTokensOff = errors.New("nmauth: this store keeps no access tokens")
	// ErrTooManyAccessTokens is returned when a user already has
	// [Config.MaxAccessTokens] tokens; 409 over HTTP.
	ErrTooManyAccessTokens = errors.New("nmauth: too many access tokens for this user")
	// ErrEnrollmentKeysOff is returned when the Store keeps no
	// enrollment keys (see [EnrollmentKeyStore]); 501 over HTTP.
	ErrEnrollmentKeysOff = errors.New("nmauth: this store keeps no enrollment keys")
	// ErrInvalidEnrollmentKey is returned by [Authenticator.JoinHost] for
	// a key that is malformed, unknown, wrong, revoked, expired or used
	// up, alike; 400 over HTTP, as Netmaker's server answers it.
	ErrInvalidEnrollmentKey = errors.New("nmauth: invalid enrollment key")
)

// RetryError is returned when a request may be tried again after a wait.
// Its Reason tells whose the wait is, and is what [errors.Is] matches:
// [ErrThrottled] when this client or account made too many attempts (429
// over HTTP), [ErrOverloaded] when the server is busy (503). Either answer
// carries Retry-After.
type RetryError struct {
	// Reason is ErrThrottled or ErrOverloaded.
	Reason error
	// RetryAfter is how long until the next attempt may succeed.
	RetryAfter time.Duration
}

// Error says why and for how long to wait.
func (e *RetryError) Error() string {
	reason := "nmauth: try again later"
	if e.Reason != nil {
		reason = e.Reason.Error()
	}
	return fmt.Sprintf("%s, retry after %s", reason, e.RetryAfter.Round(time.Second))
}

// Unwrap returns the reason, so that [errors.Is] matches it.
func (e *RetryError) Unwrap() error { return e.Reason }
