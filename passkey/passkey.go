package passkey

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/nmauth/nmauth"
)

// Config configures a [Manager]. Extension, Store, RPID and Origins are required;
// every other field has a default, given in its comment, used when the
// field is left zero.
type Config struct {
	// Extension is the capability, registered in the
	// [nmauth.Config.Extensions] of the Authenticator whose users the
	// passkeys belong to, through which the Manager logs them in, trades
	// their pre-auth tokens and writes its audit events. Required, and
	// registered before [New] is called.
	Extension *nmauth.Extension
	// Store keeps the passkeys and the challenges. Required.
	Store Store

	// RPID is the relying party id: the domain every passkey is bound to,
	// such as "example.com". Browsers make passkeys only for the domain of
	// the page or one above it, and an assertion names the RPID it was
	// made for; one for another is refused. It is never taken from a
	// request. Required; an IP address is no RPID.
	RPID string
	// RPName is the name authenticators show for the service. Defaults to
	// RPID.
	RPName string
	// Origins are the origins of the pages that run the ceremonies, such
	// as "https://auth.example.com": https, or http on localhost, with a
	// host that is RPID or under it. The browser writes the page's origin
	// into what the authenticator signs; any other is refused. They are
	// never taken from a request. Required.
	Origins []string

	// Passwordless turns on login with a discoverable passkey and no
	// password or username, for passkeys registered while it is on: they
	// are then made discoverable, and every ceremony requires user
	// verification (a PIN or biometrics), which a passwordless login
	// always does. Off by default: passkeys are a second factor only.
	Passwordless bool

	// ChallengeTTL is how long a challenge can be answered. Defaults to 5
	// minutes.
	ChallengeTTL time.Duration
	// PresenceWindow is how recent a login that passed a second factor
	// must be for a user to add a passkey to an account that already has
	// a second factor, or to remove the last one. Defaults to 10 minutes.
	PresenceWindow time.Duration
	// MaxPasskeys bounds the passkeys of one user. Defaults to 16.
	MaxPasskeys int
	// MaxChallenges bounds the live challenges of each flow (registration,
	// second factor, passwordless login) that the Store holds, across
	// replicas: a ceremony begun past it gets [ErrChallengesFull], 503
	// with Retry-After. A flood of passwordless begins thus fills only its
	// own flow's room. Defaults to 10,000.
	MaxChallenges int
	// StoreTimeout bounds every Store call; past it, or on a Store
	// failure, the caller gets [nmauth.ErrStoreUnavailable] (503 with
	// Retry-After). Defaults to 3 seconds.
	StoreTimeout time.Duration

	// Now returns the current time. Defaults to [time.Now].
	Now func() time.Time
	// Logger receives operational logs, never secrets. Defaults to
	// [slog.Default].
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.RPName == "" {
		c.RPName = c.RPID
	}
	if c.ChallengeTTL == 0 {
		c.ChallengeTTL = 5 * time.Minute
	}
	if c.PresenceWindow == 0 {
		c.PresenceWindow = 10 * time.Minute
	}
	if c.MaxPasskeys == 0 {
		c.MaxPasskeys = 16
	}
	if c.MaxChallenges == 0 {
		c.MaxChallenges = 10000
	}
	if c.StoreTimeout == 0 {
		c.StoreTimeout = 3 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// The audit events a [Manager] passes to [nmauth.Config.OnEvent] through
// [nmauth.Extension.Emit], each naming the user. A second factor's
// outcome is the Authenticator's own event ([nmauth.EventSecondFactorPassed]
// and the others), a passwordless login's [nmauth.EventLoginSucceeded].
const (
	EventAdded   nmauth.EventType = "passkey.added"
	EventRemoved nmauth.EventType = "passkey.removed"
	// EventReset is an administrator's removal of all of a user's
	// passkeys.
	EventReset nmauth.EventType = "passkey.reset"
	// EventSignCountRegressed is an assertion refused because its sign
	// count did not go up: the authenticator may have been cloned.
	EventSignCountRegressed nmauth.EventType = "passkey.sign_count_regressed"
	// EventRefused is a passwordless login refused for a passkey that did
	// not verify.
	EventRefused nmauth.EventType = "passkey.refused"
)

// Manager runs the WebAuthn ceremonies of the users of one
// [nmauth.Authenticator]: registration, the second factor after a password,
// and, when turned on, the passwordless login. It is safe for concurrent
// use; build it with [New].
type Manager struct {
	cfg   Config
	ext   *nmauth.Extension
	auth  *nmauth.Authenticator // the one that registered ext
	store *guardedStore
	web   *webauthn.WebAuthn
	// full holds, for each flow the Store last found without room, until
	// when (Unix nanoseconds) its ceremonies are refused without asking
	// the Store again, so that a flood of begins costs the Store nothing.
	full map[Flow]*atomic.Int64
}

// fullMemory is how long a flow found without room is refused without
// asking the Store.
const fullMemory = time.Second

// New validates cfg, fills its defaults and returns a Manager.
func New(cfg Config) (*Manager, error) {
	if cfg.Extension == nil || cfg.Store == nil {
		return nil, errors.New("passkey: Config.Extension and Config.Store are required")
	}
	if cfg.Extension.Authenticator() == nil {
		return nil, fmt.Errorf("passkey: Config.Extension: %w", nmauth.ErrNotRegistered)
	}
	cfg.setDefaults()
	for _, d := range []time.Duration{cfg.ChallengeTTL, cfg.PresenceWindow, cfg.StoreTimeout} {
		if d < 0 {
			return nil, errors.New("passkey: Config durations must be positive")
		}
	}
	if cfg.MaxPasskeys < 0 || cfg.MaxChallenges < 0 {
		return nil, errors.New("passkey: Config.MaxPasskeys and Config.MaxChallenges must be positive")
	}
	if err := checkRelyingParty(cfg.RPID, cfg.Origins); err != nil {
		return nil, err
	}
	web, err := webauthn.New(&webauthn.Config{
		RPID:                  cfg.RPID,
		RPDisplayName:         cfg.RPName,
		RPOrigins:             cfg.Origins,
		AttestationPreference: protocol.PreferNoAttestation,
		Timeouts: webauthn.TimeoutsConfig{
			Login:        webauthn.TimeoutConfig{Timeout: cfg.ChallengeTTL, TimeoutUVD: cfg.ChallengeTTL},
			Registration: webauthn.TimeoutConfig{Timeout: cfg.ChallengeTTL, TimeoutUVD: cfg.ChallengeTTL},
		},
		// No extension is asked for and none is used; a browser that
		// reports one anyway (credProps, say) is not refused for it.
		ExtensionsUnsolicitedOutputPolicy: protocol.UnsolicitedOutputPolicyIgnore,
	})
	if err != nil {
		return nil, fmt.Errorf("passkey: %w", err)
	}
	return newManager(cfg, web), nil
}

// newManager is the Manager of cfg, whose defaults are set.
func newManager(cfg Config, web *webauthn.WebAuthn) *Manager {
	return &Manager{
		cfg:   cfg,
		ext:   cfg.Extension,
		auth:  cfg.Extension.Authenticator(),
		store: &guardedStore{Store: cfg.Store, timeout: cfg.StoreTimeout, log: cfg.Logger, now: cfg.Now},
		web:   web,
		full:  map[Flow]*atomic.Int64{FlowRegister: {}, FlowSecondFactor: {}, FlowPasswordless: {}},
	}
}

// checkRelyingParty refuses an RPID that browsers would refuse, and an
// origin whose page could not make passkeys for it.
func checkRelyingParty(rpID string, origins []string) error {
	if rpID == "" || net.ParseIP(rpID) != nil || strings.ContainsAny(rpID, ":/ ") || rpID != strings.ToLower(rpID) {
		return fmt.Errorf("passkey: Config.RPID %q is not a domain name in lower case", rpID)
	}
	if len(origins) == 0 {
		return errors.New("passkey: Config.Origins is required")
	}
	for _, o := range origins {
		u, err := url.Parse(o)
		if err != nil || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil || o != strings.ToLower(o) {
			return fmt.Errorf("passkey: Config.Origins: %q is no origin (scheme://host[:port], in lower case)", o)
		}
		host := u.Hostname()
		local := host == "localhost" || strings.HasSuffix(host, ".localhost")
		if u.Scheme != "https" && (u.Scheme != "http" || !local) {
			return fmt.Errorf("passkey: Config.Origins: %q: browsers run WebAuthn on https, or http on localhost only", o)
		}
		if host != rpID && !strings.HasSuffix(host, "."+rpID) {
			return fmt.Errorf("passkey: Config.Origins: the host of %q is neither %s nor under it", o, rpID)
		}
	}
	return nil
}

func (m *Manager) now() time.Time { return m.cfg.Now() }

// SecondFactor reports whether a user, whose password was just found
// right, has a passkey for the account as it is now. It reads the Store
// only, so it can serve as [nmauth.Config.SecondFactor] before the
// Authenticator and its Manager exist:
//
//	store, ext := passkey.NewMemoryStore(), new(nmauth.Extension)
//	auth, err := nmauth.New(nmauth.Config{..., SecondFactor: passkey.SecondFactor(store), Extensions: []*nmauth.Extension{ext}})
//	pk, err := passkey.New(passkey.Config{Extension: ext, Store: store, ...})
//
// Give it the same Store as the Manager. It asks the Store under the
// default [Config.StoreTimeout]; a Store that fails or does not answer in
// time fails the login with a 503.
func SecondFactor(s Store) func(ctx context.Context, user nmauth.UserInfo) (bool, error) {
	g := newManager(storeOnly(s), nil).store
	return func(ctx context.Context, user nmauth.UserInfo) (bool, error) {
		rec, err := g.GetRecord(ctx, user.Name)
		if errors.Is(err, nmauth.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return len(live(rec, user).Passkeys) > 0, nil
	}
}

// live returns rec as far as it belongs to the account of user: without
// handle or passkeys when it was made for an earlier account of the same
// name.
func live(rec Record, user nmauth.UserInfo) Record {
	if !rec.Account.Equal(user.CreatedAt) {
		rec.Handle, rec.Passkeys = nil, nil
	}
	return rec
}

// account reads the user named username and the record of the user's
// live passkeys; a user without one gets an empty record, not stored.
func (m *Manager) account(ctx context.Context, username string) (nmauth.UserInfo, Record, error) {
	user, err := m.auth.Admin().LookupUser(ctx, username)
	if err != nil {
		return nmauth.UserInfo{}, Record{}, err
	}
	rec, err := m.store.GetRecord(ctx, user.Name)
	if errors.Is(err, nmauth.ErrNotFound) {
		return user, Record{User: user.Name}, nil
	}
	if err != nil {
		return nmauth.UserInfo{}, Record{}, err
	}
	return user, live(rec, user), nil
}

// hasSecondFactor reports whether the user has TOTP on or a live passkey.
func hasSecondFactor(user nmauth.UserInfo, rec Record) bool {
	return user.TOTPEnabled || len(rec.Passkeys) > 0
}

// recentPresence reports whether p is the user's own token from a login
// that passed a second factor within the presence window.
func (m *Manager) recentPresence(p nmauth.Principal) bool {
	return p.Kind == nmauth.KindUser && p.TOTP && m.now().Sub(p.IssuedAt) <= m.cfg.PresenceWindow
}

// userVerification is what every ceremony asks of the authenticator:
// required when passwordless login is on, since such a passkey is a whole
// login by itself, else preferred.
func (m *Manager) userVerification() protocol.UserVerificationRequirement {
	if m.cfg.Passwordless {
		return protocol.VerificationRequired
	}
	return protocol.VerificationPreferred
}

// putChallenge stores the challenge of a ceremony just begun, bound to its
// flow and user, until the challenge TTL ends; [ErrChallengesFull] when
// its flow has no room, or had none within the last fullMemory.
func (m *Manager) putChallenge(ctx context.Context, challenge string, c Challenge) error {
	key, ok := challengeKey(challenge)
	if !ok {
		return fmt.Errorf("passkey: the library made a malformed challenge %q", challenge)
	}
	now := m.now()
	if m.refusing(c.Flow, now) {
		return ErrChallengesFull
	}
	c.Key, c.Expires = key, now.Add(m.cfg.ChallengeTTL)
	err := m.store.PutChallenge(ctx, c, now, m.cfg.MaxChallenges)
	if errors.Is(err, ErrChallengesFull) {
		m.full[c.Flow].Store(now.Add(fullMemory).UnixNano())
	}
	return err
}

// refusing reports whether the Store found no room for flow within
// fullMemory before now.
func (m *Manager) refusing(flow Flow, now time.Time) bool {
	return now.UnixNano() < m.full[flow].Load()
}

// takeChallenge takes back, once, the challenge a browser answered, and
// refuses it with [ErrChallenge] unless it is live and was made for flow
// and, for a flow bound to a user, for user.
func (m *Manager) takeChallenge(ctx context.Context, challenge string, flow Flow, user string) (Challenge, error) {
	key, ok := challengeKey(challenge)
	if !ok {
		return Challenge{}, ErrChallenge
	}
	c, err := m.store.TakeChallenge(ctx, key)
	if errors.Is(err, nmauth.ErrNotFound) {
		return Challenge{}, ErrChallenge
	}
	if err != nil {
		return Challenge{}, err
	}
	if c.Flow != flow || c.User != user || !m.now().Before(c.Expires) {
		return Challenge{}, ErrChallenge
	}
	return c, nil
}

// challengeKey is the Store's key of a challenge, given as the browser
// gives it back, in base64url: the hex SHA-256 of its bytes.
func challengeKey(challenge string) (string, bool) {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(challenge)
	if err != nil || len(raw) < protocol.MinimumChallengeLength {
		return "", false
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), true
}

// newHandle makes a user handle: 32 random bytes, as WebAuthn advises, so
// that a handle names nobody and two users' handles never meet.
func newHandle() ([]byte, error) {
	h := make([]byte, 32)
	if _, err := rand.Read(h); err != nil {
		return nil, fmt.Errorf("passkey: user handle: %w", err)
	}
	return h, nil
}

// webUser is a user and the live passkeys of its record, as go-webauthn
// asks for them.
type webUser struct {
	name string
	rec  Record
}

func (u webUser) WebAuthnID() []byte          { return u.rec.Handle }
func (u webUser) WebAuthnName() string        { return u.name }
func (u webUser) WebAuthnDisplayName() string { return u.name }

func (u webUser) WebAuthnCredentials() []webauthn.Credential {
	creds := make([]webauthn.Credential, len(u.rec.Passkeys))
	for i, p := range u.rec.Passkeys {
		creds[i] = credential(p)
	}
	return creds
}

// credential is p as go-webauthn checks an assertion against it.
func credential(p Passkey) webauthn.Credential {
	transports := make([]protocol.AuthenticatorTransport, len(p.Transports))
	for i, t := range p.Transports {
		transports[i] = protocol.AuthenticatorTransport(t)
	}
	return webauthn.Credential{
		ID:        p.ID,
		PublicKey: p.PublicKey,
		Transport: transports,
		Flags: webauthn.CredentialFlags{
			UserPresent:    true,
			UserVerified:   p.UserVerified,
			BackupEligible: p.BackupEligible,
			BackupState:    p.BackupState,
		},
		Authenticator: webauthn.Authenticator{AAGUID: p.AAGUID, SignCount: p.SignCount},
	}
}

// findPasskey returns the index of the passkey with credential id id in
// rec, or -1.
func findPasskey(rec Record, id []byte) int {
	for i, p := range rec.Passkeys {
		if bytes.Equal(p.ID, id) {
			return i
		}
	}
	return -1
}
