package nmauth

import (
	"context"
	"errors"
	"time"

	"github.com/nmauth/nmauth/internal/attempt"
)

// What a registered [Extension] (passkeys, single sign-on) does through
// the Authenticator to check a user its own way and then log the user in:
// whether a pre-auth token may still be redeemed, its trade for a user
// token on a proof the extension checked, a login for a user it proved.
// The Authenticator never imports such a package; it asks about it only
// through [Config.SecondFactor].

// checkPreAuth reports whether preAuthToken, from [Authenticator.LoginUser],
// may still be redeemed by the user named username, and returns that name
// as prepared (see [PrepareUsername]). It reads the Store and changes
// nothing. It answers as the redemption would: [ErrUnauthenticated] for a
// token that is not the one the user may redeem (forged, expired, used,
// replaced by a later login, dead after too many failures, of a disabled
// or revoked account), [ErrForbidden] for another user's token, and a
// [*ThrottledError] while the user's second-factor backoff holds.
//
// An application checks it before it starts a second factor of its own,
// such as a passkey challenge, so that only the holder of a live pre-auth
// token can start one.
func (a *Authenticator) checkPreAuth(ctx context.Context, preAuthToken, username string) (string, error) {
	c, name, err := a.preAuthClaims(preAuthToken, username)
	if err != nil {
		return "", err
	}
	u, err := a.store.GetUser(ctx, name)
	if errors.Is(err, ErrNotFound) {
		return "", ErrUnauthenticated
	}
	if err != nil {
		return "", err
	}
	if err := preAuthStanding(&u, c, a.now()); err != nil {
		return "", err
	}
	return name, nil
}

// redeemPreAuthProof trades preAuthToken for a user token on the outcome of a
// second factor that the caller checked itself, such as a passkey
// assertion: proof is nil when the factor held, else the reason it failed.
// It is [Authenticator.VerifyTOTP] with the check made by the caller, under
// the same rules and in one atomic update: the token must still stand (see
// [Authenticator.checkPreAuth]) and is redeemed once; a failure is counted
// as a wrong code is, against the token, which dies after
// five of them, and in the user's backoff, and is then
// returned as it is. It emits [EventSecondFactorPassed],
// [EventSecondFactorFailed] or [EventSecondFactorThrottled]. The user token
// passed a second factor ([Principal.TOTP]).
//
// Call it only with the outcome of a check that ran: a fault that kept the
// check from running, such as a store that did not answer, is no failure of
// the user's.
func (a *Authenticator) redeemPreAuthProof(ctx context.Context, preAuthToken, username string, proof error) (UserLogin, error) {
	c, name, err := a.preAuthClaims(preAuthToken, username)
	if err != nil {
		return UserLogin{}, err
	}
	out, _, err := a.redeemPreAuth(ctx, name, func(u *User, now time.Time) secondFactor {
		if err := preAuthStanding(u, c, now); err != nil {
			return standingRefusal(err, EventSecondFactorThrottled)
		}
		attempt.SettleSecondFactor(&u.State.v, proof == nil, now)
		if proof != nil {
			return secondFactor{failed: proof, event: EventSecondFactorFailed}
		}
		return secondFactor{event: EventSecondFactorPassed}
	})
	return out, err
}

// issueUserToken mints a user token for the user named username, whom the
// application vouches for after checking the user without a password: a
// passwordless passkey login, say. secondFactor marks the token as having
// passed a second factor ([Principal.TOTP]), for a check that is one, such
// as a passkey with user verification. An unknown or disabled user is
// [ErrInvalidCredentials]. It emits [EventLoginSucceeded] or
// [EventLoginFailed].
//
// The token carries the generation the Store held when it was read, so a
// revocation that happens meanwhile kills it as it kills every other token.
func (a *Authenticator) issueUserToken(ctx context.Context, username string, secondFactor bool) (UserLogin, error) {
	name, err := PrepareUsername(username)
	if err != nil {
		return UserLogin{}, err
	}
	u, err := a.store.GetUser(ctx, name)
	switch {
	case errors.Is(err, ErrNotFound), err == nil && u.Disabled:
		a.emit(ctx, Event{Type: EventLoginFailed, Kind: KindUser, Name: name})
		return UserLogin{}, ErrInvalidCredentials
	case err != nil:
		return UserLogin{}, err
	}
	ttl, err := a.userTokenTTL(ctx, name)
	if err != nil {
		return UserLogin{}, err
	}
	gen := u.State.v.Generation
	tok, _, err := a.minter.mint(mintArgs{kind: kindUser, subject: name, totp: secondFactor, issuedAt: a.now(), ttl: ttl, generation: &gen})
	if err != nil {
		return UserLogin{}, err
	}
	a.emit(ctx, Event{Type: EventLoginSucceeded, Kind: KindUser, Name: name})
	markProved(ctx)
	return UserLogin{UserName: name, AuthToken: tok}, nil
}

// errNoSecondFactor ends the update of [Authenticator.issueLogin] for a
// user without a second factor, who gets a user token instead.
var errNoSecondFactor = errors.New("nmauth: no second factor")

// issueLogin answers as a right password would, for a user whom the
// application proved by another first factor, such as single sign-on: a
// user with TOTP on, or with a second factor of the application's
// ([Config.SecondFactor]), gets a pre-auth token to redeem at
// verify-totp or with [Extension.RedeemPreAuth], so that the second
// factor is still asked; any other user gets a user token. An unknown or
// disabled user is [ErrInvalidCredentials].
func (a *Authenticator) issueLogin(ctx context.Context, username string) (UserLogin, error) {
	name, err := PrepareUsername(username)
	if err != nil {
		return UserLogin{}, err
	}
	other := false
	if ask := a.askSecondFactor(name, &other); ask != nil {
		if err := ask(ctx); err != nil {
			return UserLogin{}, err
		}
	}
	var out UserLogin
	err = a.store.UpdateUser(ctx, name, func(u *User) error {
		switch {
		case u.Disabled:
			return ErrInvalidCredentials
		case !u.TOTPEnabled() && !other:
			return errNoSecondFactor
		}
		var err error
		out, err = a.grantPreAuth(u, a.now())
		return err
	})
	switch {
	case errors.Is(err, errNoSecondFactor):
		return a.issueUserToken(ctx, name, false)
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrInvalidCredentials):
		a.emit(ctx, Event{Type: EventLoginFailed, Kind: KindUser, Name: name})
		return UserLogin{}, ErrInvalidCredentials
	case err != nil:
		return UserLogin{}, err
	}
	a.emit(ctx, Event{Type: EventLoginSecondFactorRequired, Kind: KindUser, Name: name})
	markProved(ctx)
	return out, nil
}

// LookupUser returns what [Admin.ListUsers] tells of the user
// named username, or [ErrNotFound].
func (ad *Admin) LookupUser(ctx context.Context, username string) (UserInfo, error) {
	a := ad.a
	name, err := PrepareUsername(username)
	if err != nil {
		return UserInfo{}, err
	}
	u, err := a.store.GetUser(ctx, name)
	if err != nil {
		return UserInfo{}, err
	}
	return userInfo(u, a.now()), nil
}

// askSecondFactor returns the admit step of a user's password login that
// asks [Config.SecondFactor] about the user and sets *has to its answer,
// or nil when there is no such hook.
func (a *Authenticator) askSecondFactor(name string, has *bool) func(context.Context) error {
	if a.cfg.SecondFactor == nil {
		return nil
	}
	return func(ctx context.Context) error {
		u, err := a.store.GetUser(ctx, name)
		if errors.Is(err, ErrNotFound) {
			return nil // deleted since its password was checked: the grant refuses it
		}
		if err != nil {
			return err
		}
		info := userInfo(u, a.now())
		ok, err := a.guard.g.Ask(ctx, "second factor", func(ctx context.Context) (bool, error) { return a.cfg.SecondFactor(ctx, info) })
		if err != nil {
			return err
		}
		*has = ok
		return nil
	}
}
