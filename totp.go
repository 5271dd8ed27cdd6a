package nmauth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/nmauth/nmauth/internal/attempt"
	"github.com/nmauth/nmauth/internal/otpauth"
	"github.com/nmauth/nmauth/internal/recovery"
)

// The TOTP step and secret size of every enrollment.
const (
	totpPeriod     = otpauth.Period
	totpSecretSize = otpauth.SecretSize
)

// Enrollment is the answer of init-totp.
type Enrollment struct {
	URL       string `json:"otp_auth_url"`
	Signature string `json:"otp_auth_url_signature"`
	// QRCode is the URL as a PNG QR code, in a data: URL.
	QRCode string `json:"qr_code"`
}

// Completion is the answer of complete-totp.
type Completion struct {
	// RecoveryCodes are shown to the user once and never again; each logs
	// in once in place of a TOTP code.
	RecoveryCodes []string `json:"recoveryCodes"`
	// AuthToken is a fresh user token that passed TOTP, for a user who
	// enrolled themself: turning TOTP on revokes every earlier token of
	// the account, the caller's included. Empty for the master key.
	AuthToken string `json:"authToken,omitempty"`
}

// authorizeEnrollment decides whether p may enroll TOTP for u: the user
// themself or the master key, and for a user who already has TOTP on, only
// the master key or a recent login that passed TOTP.
func (a *Authenticator) authorizeEnrollment(p Principal, u *User, now time.Time) error {
	if p.Kind == KindMaster {
		return nil
	}
	if p.Kind != KindUser || p.Name != u.Name {
		return ErrForbidden
	}
	if u.TOTPEnabled() && (!p.TOTP || now.Sub(p.IssuedAt) > a.cfg.ReenrollWindow) {
		return ErrForbidden
	}
	return nil
}

// enrollee loads the user named in the path and checks p may enroll them.
func (a *Authenticator) enrollee(ctx context.Context, p Principal, username string) (User, error) {
	name, err := PrepareUsername(username)
	if err != nil {
		return User{}, err
	}
	if p.Kind != KindMaster && (p.Kind != KindUser || p.Name != name) {
		return User{}, ErrForbidden
	}
	u, err := a.store.GetUser(ctx, name)
	if err != nil {
		return User{}, err
	}
	return u, a.authorizeEnrollment(p, &u, a.now())
}

// InitTOTP starts TOTP enrollment for the user named username on behalf of
// p. It makes a new secret and returns it as an otpauth URL and QR code,
// with a signature that binds the URL to the user for
// [Config.EnrollmentTTL]. Nothing is stored until [Authenticator.CompleteTOTP].
func (a *Authenticator) InitTOTP(ctx context.Context, p Principal, username string) (Enrollment, error) {
	u, err := a.enrollee(ctx, p, username)
	if err != nil {
		return Enrollment{}, err
	}
	url, err := otpauth.NewURL(a.cfg.Rand, a.cfg.Issuer, u.Name)
	if err != nil {
		return Enrollment{}, err
	}
	qrCode, err := otpauth.QRDataURL(url)
	if err != nil {
		return Enrollment{}, err
	}
	return Enrollment{
		URL:       url,
		Signature: a.ring.Signer().EnrollmentSignature(u.Name, url, u.State.v.Generation, a.now().Add(a.cfg.EnrollmentTTL)),
		QRCode:    qrCode,
	}, nil
}

// errSealedSecret marks a stored TOTP secret that will not open.
var errSealedSecret = errors.New("nmauth: sealed totp secret")

// errWrongEnrollmentCode is a wrong first code at complete-totp.
var errWrongEnrollmentCode = fmt.Errorf("%w: wrong code", ErrInvalidEnrollment)

// errCurrentFactorNeeded refuses a replacement of a second factor without
// a code of the current one.
var errCurrentFactorNeeded = fmt.Errorf("%w: replacing TOTP needs a current code or a recovery code", ErrForbidden)

// CompleteTOTP finishes an enrollment started by [Authenticator.InitTOTP],
// for p on behalf of the user named username: it checks the signature and
// code, a code of the new secret from the authenticator app, then stores
// the secret sealed and turns TOTP on. It returns the user's new recovery
// codes, which replace any earlier ones. Turning TOTP on revokes every
// token of the account; a user enrolling themself gets a fresh token that
// passed TOTP in [Completion.AuthToken].
//
// The same call replaces the second factor of a user who already has TOTP
// on. Then, unless p is the master key, current must be a code of the
// current secret or an unused recovery code, counted as a verify-totp code
// is (else [ErrForbidden]); in every other case current is ignored, and ""
// will do.
func (a *Authenticator) CompleteTOTP(ctx context.Context, p Principal, username, url, signature, code, current string) (Completion, error) {
	u, err := a.enrollee(ctx, p, username)
	if err != nil {
		return Completion{}, err
	}
	now := a.now()
	gen := u.State.v.Generation
	if !a.ring.CheckEnrollment(u.Name, url, signature, gen, now) {
		return Completion{}, ErrInvalidEnrollment
	}
	secret, ok := otpauth.Secret(url, u.Name, a.cfg.Issuer)
	if !ok {
		return Completion{}, ErrInvalidEnrollment
	}
	if !otpauth.WellFormed(code) {
		return Completion{}, ErrMalformedCode
	}
	// The new secret's steps have never been used: its first code is
	// compared with no earlier step.
	step, _ := otpauth.Match(secret, code, now, -1)
	if step < 0 {
		return Completion{}, errWrongEnrollmentCode
	}
	needCurrent := p.Kind != KindMaster && u.TOTPEnabled()
	isRecovery := recovery.IsCode(current)
	if needCurrent && !isRecovery && !otpauth.WellFormed(current) {
		return Completion{}, errCurrentFactorNeeded
	}
	sealed, err := a.ring.SealTOTP(a.cfg.Rand, u.Name, secret)
	if err != nil {
		return Completion{}, err
	}
	codes, hashes, err := recovery.New(a.cfg.Rand)
	if err != nil {
		return Completion{}, err
	}
	ttl := a.cfg.UserTokenTTL
	if p.Kind == KindUser {
		if ttl, err = a.userTokenTTL(ctx, u.Name); err != nil {
			return Completion{}, err
		}
	}
	var r secondFactor
	var tok string
	err = a.store.UpdateUser(ctx, u.Name, func(u *User) error {
		if err := a.authorizeEnrollment(p, u, now); err != nil {
			return err
		}
		if u.State.v.Generation != gen {
			return ErrInvalidEnrollment
		}
		if needCurrent != (p.Kind != KindMaster && u.TOTPEnabled()) {
			return errCurrentFactorNeeded
		}
		if needCurrent {
			if r = a.checkCurrentFactor(u, current, isRecovery, now); r.abort != nil || r.failed != nil {
				return r.abort
			}
		}
		u.TOTPSecret, u.State.v.TOTPLastStep = sealed, step
		attempt.ClearSecondFactor(&u.State.v)
		u.RecoveryCodes = hashes
		u.State.v.Generation++
		if p.Kind != KindUser {
			return nil
		}
		g := u.State.v.Generation
		var err error
		tok, _, err = a.minter.mint(mintArgs{kind: kindUser, subject: u.Name, totp: true, issuedAt: now, ttl: ttl, generation: &g})
		return err
	})
	a.forget(KindUser, u.Name)
	if r.event != "" {
		a.emit(ctx, Event{Type: r.event, Kind: KindUser, Name: u.Name, Remaining: r.remaining})
	}
	if err == nil {
		err = r.failed
	}
	if err != nil {
		return Completion{}, a.dataFault(err, u.Name)
	}
	a.emit(ctx, Event{Type: EventTOTPEnabled, Kind: KindUser, Name: u.Name, Remaining: len(codes)})
	return Completion{RecoveryCodes: codes, AuthToken: tok}, nil
}

// checkCurrentFactor checks the code of the second factor being replaced,
// under the same backoff and counters as verify-totp.
func (a *Authenticator) checkCurrentFactor(u *User, code string, isRecovery bool, now time.Time) secondFactor {
	if now.Before(u.State.v.TOTPBlockedUntil) {
		return secondFactor{abort: &RetryError{Reason: ErrThrottled, RetryAfter: u.State.v.TOTPBlockedUntil.Sub(now)}, event: EventTOTPThrottled}
	}
	return a.matchSecondFactor(u, code, isRecovery, now)
}

// dataFault logs a TOTP secret that will not open, naming the user and
// never the data, and turns it into [ErrDataFault].
func (a *Authenticator) dataFault(err error, name string) error {
	if errors.Is(err, errSealedSecret) {
		a.log.Error("stored TOTP secret will not open; restore the root secret that sealed it", "user", name, "err", err)
		return fmt.Errorf("%w: %w", ErrDataFault, err)
	}
	return err
}

// VerifyTOTP redeems a pre-auth token from [Authenticator.LoginUser] with a
// TOTP code or a recovery code, and returns a user token. A code is
// accepted once only; a pre-auth token is redeemed once and dies after
// five wrong codes; and the user's consecutive
// failures add a backoff that holds across tokens and replicas.
func (a *Authenticator) VerifyTOTP(ctx context.Context, preAuthToken, username, code string) (UserLogin, error) {
	c, name, err := a.preAuthClaims(preAuthToken, username)
	if err != nil {
		return UserLogin{}, err
	}
	isRecovery := recovery.IsCode(code)
	if !isRecovery && !otpauth.WellFormed(code) {
		return UserLogin{}, ErrMalformedCode
	}
	out, r, err := a.redeemPreAuth(ctx, name, func(u *User, now time.Time) secondFactor {
		return a.checkSecondFactor(u, c, code, isRecovery, now)
	})
	if err == nil && isRecovery {
		out.RecoveryCodesLeft = &r.remaining
	}
	return out, err
}

// preAuthClaims verifies a pre-auth token presented for the user named
// username, and returns its claims and the prepared name.
func (a *Authenticator) preAuthClaims(preAuthToken, username string) (*claims, string, error) {
	c, _, err := a.preAuth.Verify(preAuthToken)
	if err != nil {
		return nil, "", ErrUnauthenticated
	}
	name, err := PrepareUsername(username)
	if err != nil || name != c.Subject {
		return nil, "", ErrForbidden
	}
	return c, name, nil
}

// redeemPreAuth runs check on the user of a verified pre-auth token inside
// one atomic update and, if it passes, mints in that same update a user
// token that passed a second factor, under the generation it read. It
// emits check's event, and returns check's outcome beside the login.
func (a *Authenticator) redeemPreAuth(ctx context.Context, name string, check func(u *User, now time.Time) secondFactor) (UserLogin, secondFactor, error) {
	// The lifetime is asked before the update, which holds the record: a
	// fault of it counts no attempt.
	ttl, err := a.userTokenTTL(ctx, name)
	if err != nil {
		return UserLogin{}, secondFactor{}, err
	}
	now := a.now()
	var r secondFactor
	var tok string
	err = a.store.UpdateUser(ctx, name, func(u *User) error {
		if r = check(u, now); r.abort != nil || r.failed != nil {
			return r.abort
		}
		gen := u.State.v.Generation
		var err error
		tok, _, err = a.minter.mint(mintArgs{kind: kindUser, subject: name, totp: true, issuedAt: now, ttl: ttl, generation: &gen})
		return err
	})
	if errors.Is(err, ErrNotFound) {
		err = ErrUnauthenticated
	}
	if r.event != "" && (err == nil || errors.Is(err, ErrThrottled)) {
		a.emit(ctx, Event{Type: r.event, Kind: KindUser, Name: name, Remaining: r.remaining})
	}
	if err != nil {
		return UserLogin{}, r, a.dataFault(err, name)
	}
	if r.failed != nil {
		return UserLogin{}, r, r.failed
	}
	markProved(ctx)
	return UserLogin{UserName: name, AuthToken: tok}, r, nil
}

// secondFactor is the outcome of one verification inside the atomic
// update. abort stops the update with nothing written; failed is a wrong
// code whose counters are written.
type secondFactor struct {
	abort     error
	failed    error
	event     EventType
	remaining int
}

// checkSecondFactor checks a pre-auth token's standing and its code. The
// code is counted in the same atomic update that checks it, so concurrent
// guesses are all counted and a Store that cannot record refuses right and
// wrong codes alike.
func (a *Authenticator) checkSecondFactor(u *User, c *claims, code string, isRecovery bool, now time.Time) secondFactor {
	if !u.TOTPEnabled() {
		return secondFactor{abort: ErrUnauthenticated}
	}
	if err := preAuthStanding(u, c, now); err != nil {
		return standingRefusal(err, EventTOTPThrottled)
	}
	return a.matchSecondFactor(u, code, isRecovery, now)
}

// preAuthStanding refuses, with [ErrUnauthenticated], a pre-auth token that
// is no longer the one u may redeem: of a disabled account, of another
// generation, used, replaced by a later login or dead after too many
// failures; and, with a [*RetryError] for [ErrThrottled], an attempt while u's
// second-factor backoff holds.
func preAuthStanding(u *User, c *claims, now time.Time) error {
	switch {
	case u.Disabled, !c.Generation.Present, c.Generation.Value != u.State.v.Generation,
		u.State.v.PreAuthID == "", subtle.ConstantTimeCompare([]byte(u.State.v.PreAuthID), []byte(c.ID)) != 1:
		return ErrUnauthenticated
	case now.Before(u.State.v.TOTPBlockedUntil):
		return &RetryError{Reason: ErrThrottled, RetryAfter: u.State.v.TOTPBlockedUntil.Sub(now)}
	}
	return nil
}

// standingRefusal stops an update on a refusal of preAuthStanding, with
// throttled as the event of a backoff.
func standingRefusal(err error, throttled EventType) secondFactor {
	r := secondFactor{abort: err}
	if errors.Is(err, ErrThrottled) {
		r.event = throttled
	}
	return r
}

// matchSecondFactor checks a TOTP or recovery code of u and counts a
// wrong one.
func (a *Authenticator) matchSecondFactor(u *User, code string, isRecovery bool, now time.Time) secondFactor {
	r := secondFactor{event: EventTOTPVerified}
	ok := false
	if isRecovery {
		u.RecoveryCodes, ok = recovery.Use(u.RecoveryCodes, code)
		r.event, r.remaining = EventRecoveryCodeUsed, len(u.RecoveryCodes)
	} else {
		secret, err := a.ring.OpenTOTP(u.Name, u.TOTPSecret)
		if err != nil {
			return secondFactor{abort: fmt.Errorf("%w: %w", errSealedSecret, err)}
		}
		step, replayed := otpauth.Match(secret, code, now, u.State.v.TOTPLastStep)
		if ok = step >= 0; ok {
			u.State.v.TOTPLastStep = step
		} else if replayed {
			r.event = EventTOTPReplayed
		}
	}
	attempt.SettleSecondFactor(&u.State.v, ok, now)
	if ok {
		return r
	}
	if r.event != EventTOTPReplayed {
		r.event = EventTOTPFailed
	}
	r.failed = ErrInvalidCode
	return r
}
