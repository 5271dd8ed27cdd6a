package nmauth

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/nmauth/nmauth/internal/secret"
)

// UserLogin is the result of a user login or of TOTP verification.
type UserLogin struct {
	UserName string `json:"userName"`
	// AuthToken is the user token; empty when TOTP is required.
	AuthToken string `json:"authToken,omitempty"`
	// PreAuthToken is redeemed at verify-totp when TOTP is required, or
	// with a second factor of the application's (see
	// [Config.SecondFactor]).
	PreAuthToken string `json:"preAuthToken,omitempty"`
	// TOTPRequired reports that a second factor is required: the name is
	// the spec's, from when TOTP was the only one.
	TOTPRequired bool `json:"totpRequired,omitempty"`
	// RecoveryCodesLeft is set when a recovery code was used.
	RecoveryCodesLeft *int `json:"recoveryCodesLeft,omitempty"`
}

// LoginUser checks a username and password. Without TOTP it returns a user
// token; with TOTP on it returns a pre-auth token to redeem with
// [Authenticator.VerifyTOTP], and so it does for a user with a second
// factor of the application's ([Config.SecondFactor]), to redeem with
// [Extension.RedeemPreAuth]. An unknown user, a wrong password and a
// disabled account all return [ErrInvalidCredentials] after the same work.
//
// The attempt is counted against the account and the client address in
// ctx (see [WithClientAddr]) before the password is checked; too many
// failures from one address answer a [*RetryError] for [ErrThrottled] to
// that address only (see docs/security.md for the rules).
func (a *Authenticator) LoginUser(ctx context.Context, username, password string) (UserLogin, error) {
	name, nameErr := PrepareUsername(username)
	pw, pwErr := secret.Prepare(password, false)
	var out UserLogin
	granted := EventLoginSucceeded
	t := loginTarget{kind: KindUser, name: name, unknown: ErrInvalidCredentials, update: func(ctx context.Context, fn func(account) error) error {
		return a.store.UpdateUser(ctx, name, func(u *User) error { return fn(userAccount(u)) })
	}, granted: &granted}
	if nameErr != nil || pwErr != nil {
		t.name = username
		t.nobody()
	}
	other := false
	ttl := a.cfg.UserTokenTTL
	err := a.login(ctx, t, pw, credential{}, a.admitUser(name, &ttl, &other), func(acc account, iat time.Time) error {
		var err error
		if other {
			out, err = a.grantPreAuth(acc.user, iat)
		} else {
			out, err = a.grantUser(acc.user, iat, ttl)
		}
		if out.TOTPRequired {
			granted = EventLoginSecondFactorRequired
		}
		return err
	})
	if err != nil {
		return UserLogin{}, err
	}
	markProvedAccount(ctx, accountKey{kind: KindUser, name: name})
	return out, nil
}

// admitUser is what a user's right password asks before it is granted,
// outside the update that grants it and under the login's deadline: the
// lifetime of the token it earns, into *ttl, when [Config.UserTokenLifetime]
// says it, and whether the user has a second factor of the application's
// (see askSecondFactor), into *other. A refusal, a fault of a hook
// included, gives the password's attempt back (see refuseRightPassword).
func (a *Authenticator) admitUser(name string, ttl *time.Duration, other *bool) func(context.Context) error {
	second := a.askSecondFactor(name, other)
	if a.cfg.UserTokenLifetime == nil {
		return second
	}
	return func(ctx context.Context) error {
		var err error
		if *ttl, err = a.userTokenTTL(ctx, name); err != nil || second == nil {
			return err
		}
		return second(ctx)
	}
}

// grantUser mints what a user's right password earns, inside the atomic
// update that granted it: a user token of lifetime ttl, or with TOTP on a
// pre-auth token (see grantPreAuth).
func (a *Authenticator) grantUser(u *User, iat time.Time, ttl time.Duration) (UserLogin, error) {
	if u.TOTPEnabled() {
		return a.grantPreAuth(u, iat)
	}
	gen := u.State.v.Generation
	tok, _, err := a.minter.mint(mintArgs{kind: kindUser, subject: u.Name, issuedAt: iat, ttl: ttl, generation: &gen})
	return UserLogin{UserName: u.Name, AuthToken: tok}, err
}

// userTokenTTL is the lifetime of the token that a login of the user
// named name earns in ctx: [Config.UserTokenLifetime]'s answer, at most
// [Config.UserTokenTTL]. The hook runs as the other hooks of the
// application do (see guardedStore.ask): under the Store deadline, never
// while a record is held for an update; its fault is
// [ErrStoreUnavailable].
func (a *Authenticator) userTokenTTL(ctx context.Context, name string) (time.Duration, error) {
	longest := a.cfg.UserTokenTTL
	if a.cfg.UserTokenLifetime == nil {
		return longest, nil
	}
	var answer atomic.Int64
	if err := a.guard.g.Call(ctx, "user token lifetime", func(ctx context.Context) error {
		d, err := a.cfg.UserTokenLifetime(ctx, name)
		answer.Store(int64(d))
		return err
	}, func(error) bool { return false }); err != nil {
		return 0, err
	}
	d := time.Duration(answer.Load())
	if d <= 0 || d > longest {
		return longest, nil
	}
	return d, nil
}

// grantPreAuth mints a pre-auth token, which becomes the one the user may
// redeem.
func (a *Authenticator) grantPreAuth(u *User, iat time.Time) (UserLogin, error) {
	gen := u.State.v.Generation
	tok, jti, err := a.minter.mint(mintArgs{kind: kindPreAuth, subject: u.Name, issuedAt: iat, ttl: a.cfg.PreAuthTokenTTL, generation: &gen})
	if err != nil {
		return UserLogin{}, err
	}
	u.State.v.PreAuthID, u.State.v.PreAuthFailures = jti, 0
	return UserLogin{UserName: u.Name, PreAuthToken: tok, TOTPRequired: true}, nil
}
