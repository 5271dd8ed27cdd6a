package nmauth

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/nmauth/nmauth/internal/wire"
)

// Extension is the capability of an optional package (single sign-on,
// passkeys, an application's own factor) to log users in through an
// Authenticator after a proof of its own, to trade pre-auth tokens, and to
// write audit events. The application makes one for each such package,
// registers it in [Config.Extensions] and gives it to the package:
//
//	pk := new(nmauth.Extension)
//	auth, err := nmauth.New(nmauth.Config{..., Extensions: []*nmauth.Extension{pk}})
//	m, err := passkey.New(passkey.Config{Extension: pk, ...})
//
// An Extension that no Config registered can do nothing: each of its
// methods fails with [ErrNotRegistered] (Emit drops the event). It is
// registered with one Authenticator only. Even a registered Extension
// mints no token the library has not checked: the user must exist and be
// enabled, a login carries the account's generation so that a revocation
// kills it, and a user with a second factor gets a pre-auth token unless
// the extension's proof was itself a second factor.
type Extension struct {
	auth atomic.Pointer[Authenticator]
}

// register binds e to a, once.
func (e *Extension) register(a *Authenticator) error {
	if e == nil {
		return errors.New("nmauth: Config.Extensions holds a nil Extension")
	}
	if !e.auth.CompareAndSwap(nil, a) {
		return errors.New("nmauth: Config.Extensions: an Extension is registered with another Authenticator")
	}
	return nil
}

// authenticator is the Authenticator e is registered with.
func (e *Extension) authenticator() (*Authenticator, error) {
	if e == nil {
		return nil, ErrNotRegistered
	}
	a := e.auth.Load()
	if a == nil {
		return nil, ErrNotRegistered
	}
	return a, nil
}

// Authenticator returns the Authenticator that registered e, or nil.
func (e *Extension) Authenticator() *Authenticator {
	a, _ := e.authenticator()
	return a
}

// Login answers as a right password would, for a user whom the extension
// proved by another first factor, such as single sign-on: a user with
// TOTP on, or with a second factor of the application's
// ([Config.SecondFactor]), gets a pre-auth token to redeem at verify-totp
// or with [Extension.RedeemPreAuth], so that the second factor is still
// asked; any other user gets a user token. An unknown or disabled user is
// [ErrInvalidCredentials]. It emits [EventLoginSucceeded],
// [EventLoginSecondFactorRequired] or [EventLoginFailed].
func (e *Extension) Login(ctx context.Context, username string) (UserLogin, error) {
	a, err := e.authenticator()
	if err != nil {
		return UserLogin{}, err
	}
	return a.issueLogin(ctx, username)
}

// LoginVerified mints a user token that passed a second factor
// ([Principal.TOTP]) for the user named username, whom the extension
// proved by a check that is two factors at once, such as a passkey with
// user verification in a passwordless login. An unknown or disabled user
// is [ErrInvalidCredentials]. It emits [EventLoginSucceeded] or
// [EventLoginFailed].
//
// The token carries the generation the Store held when it was read, so a
// revocation that happens meanwhile kills it as it kills every other token.
func (e *Extension) LoginVerified(ctx context.Context, username string) (UserLogin, error) {
	a, err := e.authenticator()
	if err != nil {
		return UserLogin{}, err
	}
	return a.issueUserToken(ctx, username, true)
}

// CheckPreAuth reports whether preAuthToken, from [Authenticator.LoginUser],
// may still be redeemed by the user named username, and returns that name
// as prepared (see [PrepareUsername]). It reads the Store and changes
// nothing. It answers as the redemption would: [ErrUnauthenticated] for a
// token that is not the one the user may redeem (forged, expired, used,
// replaced by a later login, dead after too many failures, of a disabled
// or revoked account), [ErrForbidden] for another user's token, and a
// [*ThrottledError] while the user's second-factor backoff holds.
//
// An extension checks it before it starts a second factor of its own, such
// as a passkey challenge, so that only the holder of a live pre-auth token
// can start one.
func (e *Extension) CheckPreAuth(ctx context.Context, preAuthToken, username string) (string, error) {
	a, err := e.authenticator()
	if err != nil {
		return "", err
	}
	return a.checkPreAuth(ctx, preAuthToken, username)
}

// RedeemPreAuth trades preAuthToken for a user token on the outcome of a
// second factor that the extension checked itself, such as a passkey
// assertion: proof is nil when the factor held, else the reason it failed.
// It is [Authenticator.VerifyTOTP] with the check made by the extension,
// under the same rules and in one atomic update: the token must still
// stand (see [Extension.CheckPreAuth]) and is redeemed once; a failure is
// counted as a wrong code is, against the token, which dies after
// five of them, and in the user's backoff, and is then
// returned as it is. It emits [EventSecondFactorPassed],
// [EventSecondFactorFailed] or [EventSecondFactorThrottled]. The user token
// passed a second factor ([Principal.TOTP]).
//
// Call it only with the outcome of a check that ran: a fault that kept the
// check from running, such as a store that did not answer, is no failure of
// the user's.
func (e *Extension) RedeemPreAuth(ctx context.Context, preAuthToken, username string, proof error) (UserLogin, error) {
	a, err := e.authenticator()
	if err != nil {
		return UserLogin{}, err
	}
	return a.redeemPreAuthProof(ctx, preAuthToken, username, proof)
}

// Emit passes an event of the extension's own to [Config.OnEvent] as the
// Authenticator passes its own, with the time, the client and the actor
// that ctx names filled in, so that the events of an optional package stand
// in one stream beside the Authenticator's. An unregistered Extension
// drops it.
func (e *Extension) Emit(ctx context.Context, ev Event) {
	if a, err := e.authenticator(); err == nil {
		a.emit(ctx, ev)
	}
}

// WriteUserLogin answers a login made on the extension's own route, such
// as a passkey login, with the bytes of the handler's user login in the
// active wire profile: in [WireSpec] the envelope with "response":
// {"userName","authToken"}, in [WireNetmaker] {"UserName","AuthToken"} in
// "Response", so a client that reads one reads the other.
func (e *Extension) WriteUserLogin(w http.ResponseWriter, login UserLogin) {
	a, err := e.authenticator()
	if err != nil {
		http.Error(w, "", http.StatusInternalServerError)
		return
	}
	a.writeAnswer(w, wire.AnswerUserLogin, login)
}

// DecodeJSON reads the body of r into v, a pointer to a struct or a
// [encoding/json.RawMessage], as the handler reads the bodies of its own
// routes: application/json (else 415), at most 64 KiB (else 413),
// exactly one JSON value with no key given twice, also in another case
// (else 400). Answer its error with [Authenticator.WriteError].
func (e *Extension) DecodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	return decodeJSON(w, r, v)
}
