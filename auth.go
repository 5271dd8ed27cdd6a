package nmauth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/secure/precis"
)

// Config configures an [Authenticator]. Store and Secrets are required;
// every other field has a default, given in its comment, used when the
// field is left zero.
type Config struct {
	// Store keeps users, hosts and their counters. Required.
	Store Store

	// Secrets are the root secrets, each at least 32 random bytes. The
	// first signs tokens and seals TOTP secrets; all of them verify and
	// open, so a new secret can be put first while the old ones age out.
	// Keep them outside the database they protect. Required.
	Secrets [][]byte

	// MasterKey is accepted as a bearer credential with full rights.
	// Nil means no master key is accepted.
	MasterKey *MasterKey

	// Issuer is the iss claim of tokens and the issuer shown in
	// authenticator apps. Defaults to "nmauth".
	Issuer string

	// UserTokenTTL is the lifetime of a user token. Defaults to 1 hour.
	UserTokenTTL time.Duration
	// PreAuthTokenTTL is the lifetime of a pre-auth token. Defaults to 5
	// minutes.
	PreAuthTokenTTL time.Duration
	// HostTokenTTL is the lifetime of a host token. Defaults to 15 minutes.
	HostTokenTTL time.Duration
	// NodeTokenTTL is the lifetime of a node token. Defaults to 15 minutes.
	NodeTokenTTL time.Duration
	// EnrollmentTTL is how long an init-totp answer can be completed.
	// Defaults to 10 minutes.
	EnrollmentTTL time.Duration
	// ReenrollWindow is how recent a TOTP-verified login must be for a
	// user who has TOTP on to enroll again. Defaults to 10 minutes.
	ReenrollWindow time.Duration

	// PasswordHashConcurrency bounds how many password hashes run at
	// once. Defaults to the number of CPUs.
	PasswordHashConcurrency int
	// PasswordHashQueue bounds how many logins wait for a hashing slot;
	// beyond it a login fails at once with [ErrOverloaded]. Defaults to 64.
	PasswordHashQueue int

	// StatusCacheTTL is the longest time the bearer check trusts what it
	// last read of a user's or host's standing (deleted, disabled,
	// revoked) before it reads the Store again; each account's entry lives
	// a random time between half of it and all of it, so that accounts
	// read together do not all go back to the Store together. Changes made
	// through this Authenticator take effect at once; changes made
	// elsewhere within this time. Defaults to 2 seconds; a negative value
	// reads the Store on every check.
	StatusCacheTTL time.Duration
	// StatusCacheSize bounds how many accounts' standing the bearer check
	// remembers; past it the accounts least likely to be checked again are
	// dropped one by one. Defaults to 200000; a negative value reads the
	// Store on every check.
	StatusCacheSize int
	// TokenCacheSize bounds how many verified tokens the bearer check
	// remembers, each until its token expires; past it the tokens least
	// likely to be presented again are dropped one by one. Defaults to
	// 200000, which holds the tokens of a fleet of 100000 hosts, each with
	// the token it uses and the one it logs in for next; a negative value
	// disables the cache.
	TokenCacheSize int

	// ClientRate is how many login and verify-totp attempts per second
	// one client address may make, after a burst of ClientBurst. It slows
	// an attacker who tries one password on many accounts. Defaults to 1
	// per second; a negative value turns the limit off.
	ClientRate float64
	// ClientBurst is how many attempts a client may make at once. Defaults
	// to 20.
	ClientBurst int
	// TrustedProxies are the addresses of reverse proxies whose
	// X-Forwarded-For header names the client. By default none: the client
	// is the connection's peer.
	TrustedProxies []netip.Prefix

	// NodeMember reports whether a host is a member of a network, for node
	// login ([Authenticator.LoginNode]). It is asked only after the host's
	// credentials are right; an error from it fails the login as a Store
	// fault does. Nil refuses every node login.
	NodeMember func(ctx context.Context, network, hostID string) (bool, error)

	// Wire chooses the bytes the handler writes: [WireSpec], the default,
	// or [WireNetmaker] for Netmaker's own clients.
	Wire WireProfile

	// OnEvent, when set, receives every audit event. It runs on the
	// request's goroutine and must not block.
	OnEvent func(Event)

	// Now returns the current time. Defaults to [time.Now].
	Now func() time.Time
	// Rand is the source of secrets, salts and token ids. Defaults to
	// [crypto/rand.Reader].
	Rand io.Reader
	// Logger receives operational logs, never secrets. Defaults to
	// [slog.Default].
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.Issuer == "" {
		c.Issuer = "nmauth"
	}
	def(&c.UserTokenTTL, time.Hour)
	def(&c.PreAuthTokenTTL, 5*time.Minute)
	def(&c.HostTokenTTL, 15*time.Minute)
	def(&c.NodeTokenTTL, 15*time.Minute)
	def(&c.EnrollmentTTL, 10*time.Minute)
	def(&c.ReenrollWindow, 10*time.Minute)
	def(&c.StatusCacheTTL, 2*time.Second)
	if c.PasswordHashQueue == 0 {
		c.PasswordHashQueue = 64
	}
	if c.ClientRate == 0 {
		c.ClientRate = 1
	}
	if c.ClientBurst == 0 {
		c.ClientBurst = 20
	}
	if c.TokenCacheSize == 0 {
		c.TokenCacheSize = 200000
	}
	if c.StatusCacheSize == 0 {
		c.StatusCacheSize = 200000
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = rand.Reader
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// PrincipalKind says what kind of credential authenticated a request.
type PrincipalKind string

// The kinds of [Principal].
const (
	KindMaster PrincipalKind = "master"
	KindUser   PrincipalKind = "user"
	KindHost   PrincipalKind = "host"
	KindNode   PrincipalKind = "node"
)

// Principal is the authenticated identity of a request. It travels in the
// request context; see [FromContext].
type Principal struct {
	Kind PrincipalKind `json:"kind"`
	// Name is the username, host id or node id; "master" for the master key.
	Name string `json:"name"`
	// Network is the network of a node token.
	Network string `json:"network,omitempty"`
	// TOTP reports that the token came from a login that passed TOTP.
	TOTP bool `json:"totp,omitempty"`
	// IssuedAt and ExpiresAt bound the token; zero for the master key.
	IssuedAt  time.Time `json:"issuedAt,omitzero"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
}

type principalKey struct{}

// NewContext returns a copy of ctx carrying p.
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal stored in ctx by the bearer middleware.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// Authenticator logs hosts and users in, runs TOTP enrollment and
// verification, and checks bearer credentials. It is safe for concurrent
// use; build it with [New].
type Authenticator struct {
	cfg     Config
	store   Store
	ring    *keyRing
	minter  *tokenMinter
	bearer  *tokenVerifier
	preAuth *tokenVerifier
	hasher  *passwordHasher
	tokens  *tokenCache
	status  *statusCache[accountStatus]
	clients *clientLimiter
	log     *slog.Logger
}

// New validates cfg, fills its defaults and returns an Authenticator.
func New(cfg Config) (*Authenticator, error) {
	if cfg.Store == nil {
		return nil, errors.New("nmauth: Config.Store is required")
	}
	cfg.setDefaults()
	for _, d := range []time.Duration{cfg.UserTokenTTL, cfg.PreAuthTokenTTL, cfg.HostTokenTTL, cfg.NodeTokenTTL, cfg.EnrollmentTTL, cfg.ReenrollWindow} {
		if d < 0 {
			return nil, errors.New("nmauth: Config lifetimes must be positive")
		}
	}
	if cfg.Wire != WireSpec && cfg.Wire != WireNetmaker {
		return nil, fmt.Errorf("nmauth: Config.Wire: unknown %v", cfg.Wire)
	}
	ring, err := newKeyRing(cfg.Secrets)
	if err != nil {
		return nil, err
	}
	ttl := [numKinds]time.Duration{
		kindUser:    cfg.UserTokenTTL,
		kindPreAuth: cfg.PreAuthTokenTTL,
		kindHost:    cfg.HostTokenTTL,
		kindNode:    cfg.NodeTokenTTL,
	}
	a := &Authenticator{
		cfg:     cfg,
		store:   cfg.Store,
		ring:    ring,
		minter:  &tokenMinter{ring: ring, issuer: cfg.Issuer, rand: cfg.Rand},
		bearer:  newTokenVerifier(ring, cfg.Issuer, cfg.Now, ttl, kindUser, kindHost, kindNode),
		preAuth: newTokenVerifier(ring, cfg.Issuer, cfg.Now, ttl, kindPreAuth),
		hasher:  newPasswordHasher(cfg.PasswordHashConcurrency, cfg.PasswordHashQueue, cfg.Rand),
		tokens:  newTokenCache(cfg.TokenCacheSize, cfg.Now),
		status:  newStatusCache(cfg.StatusCacheTTL, cfg.StatusCacheSize, loadStatus(cfg.Store)),
		clients: newClientLimiter(cfg.ClientRate, cfg.ClientBurst, cfg.TrustedProxies),
		log:     cfg.Logger,
	}
	return a, nil
}

func (a *Authenticator) now() time.Time { return a.cfg.Now() }

// PrepareUsername applies the PRECIS UsernameCaseMapped profile, so that
// names differing only in case or width are one user. Names of more than 64
// bytes are refused.
func PrepareUsername(name string) (string, error) {
	p, err := precis.UsernameCaseMapped.String(name)
	if err != nil || p == "" || len(p) > 64 {
		return "", ErrInvalidUsername
	}
	return p, nil
}

// prepareHostID accepts 1 to 128 printable characters without spaces.
func prepareHostID(id string) (string, error) {
	if id == "" || len(id) > 128 || !utf8.ValidString(id) {
		return "", ErrInvalidHost
	}
	for _, r := range id {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return "", ErrInvalidHost
		}
	}
	return id, nil
}

// prepareMAC returns a MAC address in canonical form, or "" for "".
func prepareMAC(mac string) (string, error) {
	if mac == "" {
		return "", nil
	}
	hw, err := net.ParseMAC(mac)
	if err != nil {
		return "", ErrInvalidHost
	}
	return hw.String(), nil
}

// nextValidAfter is the TokensValidAfter for a revocation at now of an
// account whose current one is prev: every token minted at or before now
// dies, and a clock stepping back never revives one.
func nextValidAfter(now, prev time.Time) time.Time {
	if next := now.Add(time.Nanosecond); next.After(prev) {
		return next
	}
	return prev
}

// UserLogin is the result of a user login or of TOTP verification.
type UserLogin struct {
	UserName string `json:"userName"`
	// AuthToken is the user token; empty when TOTP is required.
	AuthToken string `json:"authToken,omitempty"`
	// PreAuthToken is redeemed at verify-totp when TOTP is required.
	PreAuthToken string `json:"preAuthToken,omitempty"`
	TOTPRequired bool   `json:"totpRequired,omitempty"`
	// RecoveryCodesLeft is set when a recovery code was used.
	RecoveryCodesLeft *int `json:"recoveryCodesLeft,omitempty"`
}

// LoginUser checks a username and password. Without TOTP it returns a user
// token; with TOTP on it returns a pre-auth token to redeem with
// [Authenticator.VerifyTOTP]. An unknown user, a wrong password and a
// disabled account all return [ErrInvalidCredentials] after the same work.
func (a *Authenticator) LoginUser(ctx context.Context, username, password string) (UserLogin, error) {
	name, nameErr := PrepareUsername(username)
	pw, pwErr := preparePassword(password)
	var u User
	err := errors.Join(nameErr, pwErr)
	if err == nil {
		u, err = a.store.GetUser(ctx, name)
	}
	if err != nil {
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalidUsername) || errors.Is(err, ErrInvalidPassword) {
			return UserLogin{}, a.failUnknown(ctx, KindUser, username, password)
		}
		return UserLogin{}, err
	}
	now := a.now()
	if now.Before(u.PasswordBlockedUntil) {
		a.emit(Event{Type: EventLoginThrottled, Kind: KindUser, Name: name})
		return UserLogin{}, &ThrottledError{RetryAfter: u.PasswordBlockedUntil.Sub(now)}
	}
	ok, upgrade, err := a.hasher.verify(ctx, u.PasswordHash, pw)
	if err != nil && !errors.Is(err, errMalformedHash) {
		return UserLogin{}, err
	}
	if err != nil {
		a.log.Error("stored password hash is malformed", "user", name)
	}
	if !ok || u.Disabled {
		return UserLogin{}, a.failUser(ctx, name, ok)
	}
	newHash := ""
	if upgrade {
		if newHash, err = a.hasher.hash(ctx, pw); err != nil {
			a.log.Warn("password hash upgrade skipped", "user", name, "err", err)
			newHash = ""
		}
	}
	return a.finishUserLogin(ctx, name, newHash)
}

// finishUserLogin resets the failure counter, upgrades the hash if asked,
// and mints the token the login earned.
func (a *Authenticator) finishUserLogin(ctx context.Context, name, newHash string) (UserLogin, error) {
	var out UserLogin
	err := a.store.UpdateUser(ctx, name, func(u *User) error {
		if u.Disabled {
			return ErrInvalidCredentials
		}
		u.PasswordFailures = 0
		u.PasswordBlockedUntil = time.Time{}
		if newHash != "" {
			u.PasswordHash = newHash
		}
		iat := a.now()
		out = UserLogin{UserName: name}
		if u.TOTPEnabled() {
			tok, jti, err := a.minter.mint(mintArgs{kind: kindPreAuth, subject: name, issuedAt: iat, ttl: a.cfg.PreAuthTokenTTL})
			if err != nil {
				return err
			}
			u.PreAuthID, u.PreAuthFailures = jti, 0
			out.PreAuthToken, out.TOTPRequired = tok, true
			return nil
		}
		tok, _, err := a.minter.mint(mintArgs{kind: kindUser, subject: name, issuedAt: iat, ttl: a.cfg.UserTokenTTL})
		out.AuthToken = tok
		return err
	})
	if errors.Is(err, ErrNotFound) {
		err = ErrInvalidCredentials
	}
	if err != nil {
		return UserLogin{}, err
	}
	a.emit(Event{Type: EventLoginSucceeded, Kind: KindUser, Name: name})
	return out, nil
}

// failUnknown spends the time of a real password check, so that an unknown
// name cannot be told from a wrong password.
func (a *Authenticator) failUnknown(ctx context.Context, kind PrincipalKind, name, password string) error {
	if err := a.hasher.verifyDummy(ctx, password); err != nil {
		return err
	}
	a.emit(Event{Type: EventLoginFailed, Kind: kind, Name: safeName(name)})
	return ErrInvalidCredentials
}

// failUser records a failed password for a known user. A right password on
// a disabled account counts as no failure but answers the same.
func (a *Authenticator) failUser(ctx context.Context, name string, passwordOK bool) error {
	a.emit(Event{Type: EventLoginFailed, Kind: KindUser, Name: name})
	if passwordOK {
		return ErrInvalidCredentials
	}
	now := a.now()
	err := a.store.UpdateUser(ctx, name, func(u *User) error {
		u.PasswordFailures++
		u.PasswordBlockedUntil = addDelay(now, passwordDelay(u.PasswordFailures))
		return nil
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return ErrInvalidCredentials
}

// HostLogin is the result of a host login.
type HostLogin struct {
	AuthToken string `json:"authToken"`
	ID        string `json:"id"`
}

// LoginHost checks a host's id, password and, when the host has a
// registered MAC address and the caller sends one, that they match, and
// returns a host token. An unknown host id returns [ErrUnknownHost], which
// matches [ErrInvalidCredentials], after the same work as a wrong password.
func (a *Authenticator) LoginHost(ctx context.Context, id, mac, password string) (HostLogin, error) {
	tok, id, err := a.loginHost(ctx, id, mac, password, KindHost, func(id string) mintArgs {
		return mintArgs{kind: kindHost, subject: id, ttl: a.cfg.HostTokenTTL}
	}, nil)
	if err != nil {
		return HostLogin{}, err
	}
	return HostLogin{AuthToken: tok, ID: id}, nil
}

// NodeLogin is the result of a node login: a node token for one network.
type NodeLogin struct {
	AuthToken string `json:"authToken"`
	ID        string `json:"id"`
	Network   string `json:"network"`
}

// LoginNode checks a host's credentials as [Authenticator.LoginHost] does
// and returns a node token for network, whose subject is the host id. The
// host must be a member of network by [Config.NodeMember], asked only once
// the credentials are right; a host that is not answers [ErrForbidden],
// and so does every host when NodeMember is nil.
func (a *Authenticator) LoginNode(ctx context.Context, network, id, mac, password string) (NodeLogin, error) {
	if !validNetwork(network) {
		return NodeLogin{}, ErrInvalidNetwork
	}
	admit := func(ctx context.Context, id string) error {
		if a.cfg.NodeMember == nil {
			return ErrForbidden
		}
		ok, err := a.cfg.NodeMember(ctx, network, id)
		if err != nil {
			return fmt.Errorf("nmauth: node membership: %w", err)
		}
		if !ok {
			return ErrForbidden
		}
		return nil
	}
	tok, id, err := a.loginHost(ctx, id, mac, password, KindNode, func(id string) mintArgs {
		return mintArgs{kind: kindNode, subject: id, network: network, ttl: a.cfg.NodeTokenTTL}
	}, admit)
	if err != nil {
		return NodeLogin{}, err
	}
	return NodeLogin{AuthToken: tok, ID: id, Network: network}, nil
}

// validNetwork accepts 1 to 128 printable characters without spaces, the
// same form as a host id.
func validNetwork(network string) bool {
	_, err := prepareHostID(network)
	return err == nil
}

// loginHost checks a host's credentials, then asks admit (when set)
// whether the login may go on, then mints the token that token describes
// in the same atomic update that resets the failure counter. kind is what
// the audit events name.
func (a *Authenticator) loginHost(ctx context.Context, id, mac, password string, kind PrincipalKind,
	token func(id string) mintArgs, admit func(ctx context.Context, id string) error) (string, string, error) {
	id, idErr := prepareHostID(id)
	mac, macErr := prepareMAC(mac)
	if macErr != nil {
		return "", "", macErr
	}
	password, pwErr := preparePassword(password)
	var h Host
	err := errors.Join(idErr, pwErr)
	if err == nil {
		h, err = a.store.GetHost(ctx, id)
	}
	if err != nil {
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalidHost) || errors.Is(err, ErrInvalidPassword) {
			if err := a.failUnknown(ctx, kind, id, password); !errors.Is(err, ErrInvalidCredentials) {
				return "", "", err
			}
			return "", "", ErrUnknownHost
		}
		return "", "", err
	}
	now := a.now()
	if now.Before(h.PasswordBlockedUntil) {
		a.emit(Event{Type: EventLoginThrottled, Kind: kind, Name: id})
		return "", "", &ThrottledError{RetryAfter: h.PasswordBlockedUntil.Sub(now)}
	}
	ok, upgrade, err := a.hasher.verify(ctx, h.PasswordHash, password)
	if err != nil && !errors.Is(err, errMalformedHash) {
		return "", "", err
	}
	macOK := h.MACAddress == "" || mac == "" || mac == h.MACAddress
	if !ok || !macOK || h.Disabled {
		return "", "", a.failHost(ctx, id, ok && macOK)
	}
	if admit != nil {
		if err := admit(ctx, id); err != nil {
			return "", "", err
		}
	}
	newHash := ""
	if upgrade {
		newHash, _ = a.hasher.hash(ctx, password)
	}
	var tok string
	err = a.store.UpdateHost(ctx, id, func(h *Host) error {
		if h.Disabled {
			return ErrInvalidCredentials
		}
		h.PasswordFailures, h.PasswordBlockedUntil = 0, time.Time{}
		if newHash != "" {
			h.PasswordHash = newHash
		}
		args := token(id)
		args.issuedAt = a.now()
		var err error
		tok, _, err = a.minter.mint(args)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		err = ErrInvalidCredentials
	}
	if err != nil {
		return "", "", err
	}
	a.emit(Event{Type: EventLoginSucceeded, Kind: kind, Name: id})
	return tok, id, nil
}

func (a *Authenticator) failHost(ctx context.Context, id string, credentialsOK bool) error {
	a.emit(Event{Type: EventLoginFailed, Kind: KindHost, Name: id})
	if credentialsOK {
		return ErrInvalidCredentials
	}
	now := a.now()
	err := a.store.UpdateHost(ctx, id, func(h *Host) error {
		h.PasswordFailures++
		h.PasswordBlockedUntil = addDelay(now, passwordDelay(h.PasswordFailures))
		return nil
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return ErrInvalidCredentials
}

// IssueNodeToken mints a node token for the application's own node
// authentication route, after the application has checked the node.
func (a *Authenticator) IssueNodeToken(network, nodeID string) (string, error) {
	if network == "" || nodeID == "" || len(network) > 128 || len(nodeID) > 128 {
		return "", fmt.Errorf("%w: node token needs a network and a node id", ErrInvalidHost)
	}
	tok, _, err := a.minter.mint(mintArgs{kind: kindNode, subject: nodeID, network: network, issuedAt: a.now(), ttl: a.cfg.NodeTokenTTL})
	return tok, err
}

// safeName bounds a name taken from a request before it reaches a log
// line or an event.
func safeName(s string) string {
	if len(s) > 64 || !utf8.ValidString(s) {
		return "(invalid)"
	}
	return s
}

func addDelay(now time.Time, d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return now.Add(d)
}

// passwordDelay is the backoff after n consecutive wrong passwords: none
// for the first 5, then 1 s doubling up to 1 minute. So there are never
// more than 5 consecutive failures without a delay, and an attacker cannot
// hold an account shut for more than a minute at a time.
func passwordDelay(n int) time.Duration {
	const free, max = 5, time.Minute
	if n < free {
		return 0
	}
	return min(time.Second<<min(n-free, 16), max)
}
