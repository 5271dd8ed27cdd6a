package nmauth

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"strings"
	"time"

	"github.com/boombuler/barcode/qr"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

// TOTP parameters: every enrollment uses these, as authenticator apps
// expect.
const (
	totpPeriod     = 30
	totpDigits     = 6
	totpSecretSize = 20 // 160 bits
	qrSize         = 256
)

// Recovery codes: 10 of them, each 16 characters of base32 (80 bits).
const (
	recoveryCodeCount = 10
	recoveryCodeChars = 16
)

// maxTOTPFailuresPerToken is how many wrong codes a pre-auth token survives.
const maxTOTPFailuresPerToken = 5

// The backoff of wrong TOTP codes for one user, across all pre-auth tokens
// and replicas: the first 5 consecutive failures are free, then each
// further attempt waits 1 s doubling up to 15 minutes (see [backoff]). At
// that cap an attacker who knows the password gets 96 guesses a day; with
// at most 3 of 10^6 codes valid at any time the expected time to break the
// second factor is over 9 years.
const (
	totpFreeFailures = 5
	totpMaxDelay     = 15 * time.Minute
)

// totpDelay is the backoff after n consecutive wrong codes for one user.
func totpDelay(n int) time.Duration { return backoff(n, totpFreeFailures, totpMaxDelay) }

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
	secret := make([]byte, totpSecretSize)
	if _, err := io.ReadFull(a.cfg.Rand, secret); err != nil {
		return Enrollment{}, fmt.Errorf("nmauth: totp secret: %w", err)
	}
	key, err := totp.Generate(totp.GenerateOpts{
		Issuer:      a.cfg.Issuer,
		AccountName: u.Name,
		Period:      totpPeriod,
		Secret:      secret,
		Digits:      otp.DigitsSix,
		Algorithm:   otp.AlgorithmSHA1,
	})
	if err != nil {
		return Enrollment{}, fmt.Errorf("nmauth: totp key: %w", err)
	}
	url := key.URL()
	qrCode, err := qrDataURL(url)
	if err != nil {
		return Enrollment{}, err
	}
	return Enrollment{
		URL:       url,
		Signature: a.ring.signer().enrollmentSignature(u.Name, url, u.State.v.Generation, a.now().Add(a.cfg.EnrollmentTTL)),
		QRCode:    qrCode,
	}, nil
}

// qrDataURL draws the URL as a QR code with whole-pixel modules and the
// four-module quiet zone the QR standard asks for, so that every camera
// reads it, and returns it as a PNG data: URL.
func qrDataURL(url string) (string, error) {
	code, err := qr.Encode(url, qr.M, qr.Auto)
	if err != nil {
		return "", fmt.Errorf("nmauth: qr code: %w", err)
	}
	const quiet = 4
	n := code.Bounds().Dx()
	scale := max(1, qrSize/(n+2*quiet))
	side := (n + 2*quiet) * scale
	img := image.NewPaletted(image.Rect(0, 0, side, side), color.Palette{color.White, color.Black})
	for y := range n {
		for x := range n {
			if code.At(x, y) == color.Black {
				draw.Draw(img, image.Rect((x+quiet)*scale, (y+quiet)*scale, (x+quiet+1)*scale, (y+quiet+1)*scale), image.Black, image.Point{}, draw.Src)
			}
		}
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		return "", fmt.Errorf("nmauth: qr code: %w", err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes()), nil
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
	if !a.ring.checkEnrollment(u.Name, url, signature, gen, now) {
		return Completion{}, ErrInvalidEnrollment
	}
	secret, err := enrollmentSecret(url, u.Name, a.cfg.Issuer)
	if err != nil {
		return Completion{}, err
	}
	if !wellFormedTOTP(code) {
		return Completion{}, ErrMalformedCode
	}
	// The new secret's steps have never been used: its first code is
	// compared with no earlier step.
	step, _ := matchTOTP(secret, code, now, -1)
	if step < 0 {
		return Completion{}, errWrongEnrollmentCode
	}
	needCurrent := p.Kind != KindMaster && u.TOTPEnabled()
	recovery := isRecoveryCode(current)
	if needCurrent && !recovery && !wellFormedTOTP(current) {
		return Completion{}, errCurrentFactorNeeded
	}
	sealed, err := a.ring.sealTOTP(a.cfg.Rand, u.Name, secret)
	if err != nil {
		return Completion{}, err
	}
	codes, hashes, err := newRecoveryCodes(a.cfg.Rand)
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
			if r = a.checkCurrentFactor(u, current, recovery, now); r.abort != nil || r.failed != nil {
				return r.abort
			}
		}
		u.TOTPSecret, u.State.v.TOTPLastStep = sealed, step
		u.State.v.TOTPFailures, u.State.v.TOTPBlockedUntil = 0, time.Time{}
		u.State.v.PreAuthID, u.State.v.PreAuthFailures = "", 0
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
	a.status.forget(KindUser, u.Name)
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
func (a *Authenticator) checkCurrentFactor(u *User, code string, recovery bool, now time.Time) secondFactor {
	if now.Before(u.State.v.TOTPBlockedUntil) {
		return secondFactor{abort: &RetryError{Reason: ErrThrottled, RetryAfter: u.State.v.TOTPBlockedUntil.Sub(now)}, event: EventTOTPThrottled}
	}
	return a.matchSecondFactor(u, code, recovery, now)
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

// enrollmentSecret reads the secret back from a signed otpauth URL and
// checks that it is the URL this package makes for the user.
func enrollmentSecret(rawURL, name, issuer string) ([]byte, error) {
	key, err := otp.NewKeyFromURL(rawURL)
	if err != nil || key.Type() != "totp" || key.AccountName() != name || key.Issuer() != issuer ||
		key.Period() != totpPeriod || key.Digits() != otp.DigitsSix || key.Algorithm() != otp.AlgorithmSHA1 {
		return nil, ErrInvalidEnrollment
	}
	secret, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(strings.ToUpper(key.Secret()))
	if err != nil || len(secret) != totpSecretSize {
		return nil, ErrInvalidEnrollment
	}
	return secret, nil
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
	recovery := isRecoveryCode(code)
	if !recovery && !wellFormedTOTP(code) {
		return UserLogin{}, ErrMalformedCode
	}
	out, r, err := a.redeemPreAuth(ctx, name, func(u *User, now time.Time) secondFactor {
		return a.checkSecondFactor(u, c, code, recovery, now)
	})
	if err == nil && recovery {
		out.RecoveryCodesLeft = &r.remaining
	}
	return out, err
}

// preAuthClaims verifies a pre-auth token presented for the user named
// username, and returns its claims and the prepared name.
func (a *Authenticator) preAuthClaims(preAuthToken, username string) (*claims, string, error) {
	c, _, err := a.preAuth.verify(preAuthToken)
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
func (a *Authenticator) checkSecondFactor(u *User, c *claims, code string, recovery bool, now time.Time) secondFactor {
	if !u.TOTPEnabled() {
		return secondFactor{abort: ErrUnauthenticated}
	}
	if err := preAuthStanding(u, c, now); err != nil {
		return standingRefusal(err, EventTOTPThrottled)
	}
	return a.matchSecondFactor(u, code, recovery, now)
}

// preAuthStanding refuses, with [ErrUnauthenticated], a pre-auth token that
// is no longer the one u may redeem: of a disabled account, of another
// generation, used, replaced by a later login or dead after too many
// failures; and, with a [*RetryError] for [ErrThrottled], an attempt while u's
// second-factor backoff holds.
func preAuthStanding(u *User, c *claims, now time.Time) error {
	switch {
	case u.Disabled, !c.Generation.present, c.Generation.value != u.State.v.Generation,
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
func (a *Authenticator) matchSecondFactor(u *User, code string, recovery bool, now time.Time) secondFactor {
	r := secondFactor{event: EventTOTPVerified}
	ok := false
	if recovery {
		ok = useRecoveryCode(u, code)
		r.event, r.remaining = EventRecoveryCodeUsed, len(u.RecoveryCodes)
	} else {
		secret, err := a.ring.openTOTP(u.Name, u.TOTPSecret)
		if err != nil {
			return secondFactor{abort: fmt.Errorf("%w: %w", errSealedSecret, err)}
		}
		step, replayed := matchTOTP(secret, code, now, u.State.v.TOTPLastStep)
		if ok = step >= 0; ok {
			u.State.v.TOTPLastStep = step
		} else if replayed {
			r.event = EventTOTPReplayed
		}
	}
	settleSecondFactor(u, ok, now)
	if ok {
		return r
	}
	if r.event != EventTOTPReplayed {
		r.event = EventTOTPFailed
	}
	r.failed = ErrInvalidCode
	return r
}

// settleSecondFactor records the outcome of a second factor in u. One that
// passed consumes the pre-auth token and clears the failures; one that
// failed is counted against the token, which dies at
// five, and in the user's backoff.
func settleSecondFactor(u *User, passed bool, now time.Time) {
	if passed {
		u.State.v.TOTPFailures, u.State.v.TOTPBlockedUntil = 0, time.Time{}
		u.State.v.PreAuthID, u.State.v.PreAuthFailures = "", 0
		return
	}
	u.State.v.TOTPFailures++
	u.State.v.PreAuthFailures++
	if u.State.v.PreAuthFailures >= maxTOTPFailuresPerToken {
		u.State.v.PreAuthID, u.State.v.PreAuthFailures = "", 0
	}
	u.State.v.TOTPBlockedUntil = addDelay(now, totpDelay(u.State.v.TOTPFailures))
}

// hotp computes the RFC 4226 dynamic truncation of HMAC-SHA1(secret, counter).
func hotp(secret []byte, counter uint64) uint32 {
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], counter)
	m := hmac.New(sha1.New, secret)
	m.Write(msg[:])
	sum := m.Sum(nil)
	off := sum[len(sum)-1] & 0x0f
	return binary.BigEndian.Uint32(sum[off:]) & 0x7fffffff
}

// totpCode returns the code for a 30-second step as a fixed-width string.
func totpCode(secret []byte, step int64, digits int) string {
	mod := uint32(1)
	for range digits {
		mod *= 10
	}
	return fmt.Sprintf("%0*d", digits, hotp(secret, uint64(step))%mod)
}

// matchTOTP checks code against steps T-1, T and T+1, comparing every one
// in constant time. It returns the latest matching step after lastStep, or
// -1; replayed reports a match at a step already used.
func matchTOTP(secret []byte, code string, now time.Time, lastStep int64) (step int64, replayed bool) {
	t := now.Unix() / totpPeriod
	step = -1
	for s := t - 1; s <= t+1; s++ {
		if subtle.ConstantTimeCompare([]byte(totpCode(secret, s, totpDigits)), []byte(code)) == 1 {
			if s > lastStep {
				step = s
			} else {
				replayed = true
			}
		}
	}
	return step, replayed
}

func wellFormedTOTP(code string) bool {
	if len(code) != totpDigits {
		return false
	}
	for i := 0; i < len(code); i++ {
		if code[i] < '0' || code[i] > '9' {
			return false
		}
	}
	return true
}

// recoveryAlphabet has 32 symbols, so a random byte masked to 5 bits picks
// one without bias.
const recoveryAlphabet = "abcdefghijkmnpqrstuvwxyz23456789"

// newRecoveryCodes returns fresh codes formatted xxxx-xxxx-xxxx-xxxx and
// their hashes.
func newRecoveryCodes(rnd io.Reader) (codes, hashes []string, err error) {
	buf := make([]byte, recoveryCodeChars)
	for range recoveryCodeCount {
		if _, err := io.ReadFull(rnd, buf); err != nil {
			return nil, nil, fmt.Errorf("nmauth: recovery code: %w", err)
		}
		var b strings.Builder
		for i, x := range buf {
			if i > 0 && i%4 == 0 {
				b.WriteByte('-')
			}
			b.WriteByte(recoveryAlphabet[x&31])
		}
		codes = append(codes, b.String())
		hashes = append(hashes, hashRecoveryCode(b.String()))
	}
	return codes, hashes, nil
}

// normalizeRecoveryCode drops dashes and spaces and lowers the case, so a
// code typed by hand matches.
func normalizeRecoveryCode(code string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '-' || r == ' ':
			return -1
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return r
	}, code)
}

func isRecoveryCode(code string) bool {
	if len(code) > 4*recoveryCodeChars {
		return false
	}
	n := normalizeRecoveryCode(code)
	if len(n) != recoveryCodeChars {
		return false
	}
	for i := 0; i < len(n); i++ {
		if strings.IndexByte(recoveryAlphabet, n[i]) < 0 {
			return false
		}
	}
	return true
}

// hashRecoveryCode is a plain SHA-256: with 80 random bits a code cannot be
// found from its hash by search.
func hashRecoveryCode(code string) string {
	sum := sha256.Sum256([]byte(normalizeRecoveryCode(code)))
	return hex.EncodeToString(sum[:])
}

// useRecoveryCode removes the matching code from u and reports whether
// there was one. Every stored hash is compared.
func useRecoveryCode(u *User, code string) bool {
	h := []byte(hashRecoveryCode(code))
	found := -1
	for i, stored := range u.RecoveryCodes {
		if subtle.ConstantTimeCompare(h, []byte(stored)) == 1 {
			found = i
		}
	}
	if found < 0 {
		return false
	}
	u.RecoveryCodes = append(u.RecoveryCodes[:found:found], u.RecoveryCodes[found+1:]...)
	return true
}
