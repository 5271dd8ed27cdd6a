package nmauth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"runtime"
	"time"

	"github.com/nmauth/nmauth/internal/hashfmt"
	"github.com/nmauth/nmauth/internal/knownset"
	"github.com/nmauth/nmauth/internal/secret"
)

// Config configures an [Authenticator]. Store and Secrets are required;
// every other field has a default, given in its comment, used when the
// field is left zero.
type Config struct {
	// Store keeps users, hosts and their counters. Required, and not a
	// nil pointer. A call of it that panics fails that call alone, as a
	// 500 over HTTP, with the stack in the log; the process goes on.
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

	// UserTokenTTL is the lifetime of a user token, and with
	// UserTokenLifetime set the longest. Defaults to 1 hour.
	UserTokenTTL time.Duration
	// UserTokenLifetime, when set, gives each user token its lifetime as
	// it is minted, so that it may depend on the login that earns it
	// (Netmaker's server picks one by the client that logs in): ctx is
	// that login's, the request's over HTTP with whatever the application
	// put in it, and username is as [PrepareUsername] returns it. An
	// answer of zero or less, or longer than UserTokenTTL, is
	// UserTokenTTL. It is called once a login is granted, while the
	// user's record is held for the update that grants it: it must not
	// call the Store, and must be fast. An error fails the login as a
	// Store fault does.
	UserTokenLifetime func(ctx context.Context, username string) (time.Duration, error)
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

	// AccessTokenTTL is the lifetime of an access token made without an
	// expiry. Defaults to 90 days.
	AccessTokenTTL time.Duration
	// MaxAccessTokenTTL is the longest lifetime an access token may be
	// given. Defaults to 366 days, so that a token asked for a year from
	// a client's clock fits.
	MaxAccessTokenTTL time.Duration
	// MaxAccessTokens bounds how many access tokens one user may hold,
	// however many are created at once (the Store counts them with each
	// insert). Defaults to 100.
	MaxAccessTokens int

	// PasswordHashConcurrency bounds the threads that password hashes
	// run at once: a hash holds a slot for each thread its check runs,
	// one for the house argon2id and every format but argon2 of several
	// lanes, which holds one for each lane, at most all of them. Defaults
	// to the number of CPUs.
	PasswordHashConcurrency int
	// PasswordHashQueue bounds how many logins wait for a hashing slot.
	// The slots are shared fairly: an account at an address it logged in
	// rightly from before takes seven turns of eight, an account from
	// another address the eighth, a name no account has only the turns
	// nobody else wants; within each, clients take turns by client group
	// (IPv4 /24, IPv6 /56), the known by account, and one account holds
	// at most an eighth of the places. Past the bound a login takes the place of one of a
	// lower class, or of the newest of the longest group, drawn at random
	// among equals, or fails at once with [ErrOverloaded]. Defaults to
	// 64; a negative value queues none.
	PasswordHashQueue int
	// HostLoginConcurrency bounds how many host logins run their Store
	// calls at once; HostLoginQueue how many more wait, shared as the
	// hashing slots are. A login's Store deadline starts once it runs, so
	// a burst of hosts waits in the queue rather than failing because its
	// deadline ran out behind the others. A host at an address it logged
	// in rightly from waits with the known without a Store read: the
	// Authenticator keeps such (host, address) pairs as keyed hashes,
	// about 40 bytes a host, read from the Store's hosts in the
	// background from New on and added by each right login (see
	// [Stats.KnownHosts] and docs/security.md); any other host id, a
	// made-up one too, waits with the new. Default to 4 per CPU and
	// 16384; a negative queue queues none.
	HostLoginConcurrency, HostLoginQueue int
	// HostWriteQueue bounds how many writes of right host logins wait to
	// be applied in a batch, when the Store is a [HostBatchStore]; past it
	// a login makes its write itself, before it answers. Defaults to
	// 16384; a negative value queues none.
	HostWriteQueue int
	// QueueTimeout bounds how long a login waits for its turn, for a
	// hashing slot or a host login's; past it the login fails with
	// [ErrOverloaded] (503 with Retry-After over HTTP). Defaults to 10
	// seconds.
	QueueTimeout time.Duration

	// StatusCacheTTL is the longest time the bearer check trusts what it
	// last read of a user's or host's standing (deleted, disabled,
	// revoked) before it reads the Store again; each account's entry lives
	// a random time between half of it and all of it, so that accounts
	// read together do not all go back to the Store together. Changes made
	// through this Authenticator take effect at once; changes made
	// elsewhere within this time. A host login trusts for this time what
	// the host's last login read of its machine secret, when that login
	// had nothing to write or its write is still to be made as read (see
	// docs/security.md). Defaults to 2 seconds;
	// a negative value reads the Store on every check and every login.
	StatusCacheTTL time.Duration
	// StatusCacheSize bounds how many accounts' standing the bearer check
	// remembers, with the hosts' machine credentials; past it the
	// accounts least likely to be checked again are dropped one by one.
	// Defaults to 200000; a negative value reads the Store on every check
	// and every login.
	StatusCacheSize int
	// TokenCacheSize bounds how many verified tokens the bearer check
	// remembers, each until its token expires; past it a new token takes
	// the place of an expired one or of one drawn at random. A token is
	// remembered from its second check on, so that tokens presented once
	// never displace those presented again. The cache takes memory as it
	// fills, about 190 bytes a node token. Defaults to 2000000, which holds the
	// tokens of a fleet of a million hosts, each with the token it uses and
	// the one it logs in for next; a negative value disables the cache.
	TokenCacheSize int

	// ClientRate is how many login and verify-totp attempts per second
	// one client address may make, after a burst of ClientBurst. It slows
	// an attacker who tries one password on many accounts. An attempt
	// that succeeds is given back once answered, so that clients behind
	// one address are not slowed by their own logins (see
	// [Authenticator.Limit]). Defaults to 1 per second; a negative value
	// turns the limit off.
	ClientRate float64
	// ClientBurst is how many attempts a client may make at once. Defaults
	// to 20.
	ClientBurst int
	// TrustedProxies are the addresses of reverse proxies whose
	// X-Forwarded-For header names the client: the nearest address in it,
	// from the right, that is not itself a trusted proxy. A request from a
	// trusted proxy without the header is the proxy's own. By default
	// none: the client is the connection's peer.
	TrustedProxies []netip.Prefix

	// RefuseMACChange refuses, with [ErrForbidden], a host login with the
	// right password from another MAC address than the host's registered
	// one, or with none. By default such a login succeeds and emits
	// [EventHostMACChanged]: a MAC address is no secret and a host may
	// change its network card. Either way it never answers as a wrong
	// credential.
	RefuseMACChange bool

	// StoreTimeout bounds every Store call, and every login as a whole
	// from when it is admitted ([Config.QueueTimeout] bounds its wait)
	// but the time of its password hash: its Store calls and the hooks it
	// asks. Past it, or when the Store fails, the caller gets
	// [ErrStoreUnavailable] (503 with Retry-After over HTTP). Defaults to
	// 3 seconds.
	StoreTimeout time.Duration

	// NodeMember reports whether a host is a member of a network, for node
	// login ([Authenticator.LoginNode]). It is asked only after the host's
	// credentials are right, with the host id as [PrepareHostID] returns
	// it; an error from it fails the login as a Store fault does. Nil
	// refuses every node login.
	NodeMember func(ctx context.Context, network, hostID string) (bool, error)

	// SecondFactor, when set, reports whether a user has a second factor
	// that the Authenticator does not keep itself, such as a passkey (see
	// the passkey package): a right password of such a user earns a
	// pre-auth token, as with TOTP on, which the application redeems with
	// [Extension.RedeemPreAuth] once it has checked that factor. It is
	// asked only once the password is right, with what
	// [Admin.LookupUser] tells of the user then; an error fails
	// the login as a Store fault does. Nil leaves TOTP the only second
	// factor.
	SecondFactor func(ctx context.Context, user UserInfo) (bool, error)

	// NodeTokenValid, when set, is asked by the bearer check about every
	// node token minted by [Authenticator.IssueNodeToken], after its
	// signature and expiry are checked: false refuses the token as
	// [ErrUnauthenticated], and an error fails the check as a Store fault
	// does (a 503 with Retry-After over HTTP). It lets the application revoke such a token
	// before it expires, say when it deletes the node or the node leaves
	// the network; [Principal.IssuedAt] tells tokens minted before a
	// revocation from later ones. Node tokens from
	// [Authenticator.LoginNode] are not asked about: they die with their
	// host's tokens. It runs on every such check, uncached, and must be
	// fast. Nil accepts every such token until it expires.
	NodeTokenValid func(ctx context.Context, p Principal) (bool, error)

	// HostJoined, when set, is called by the handler's join routes once a
	// host has joined with an enrollment key ([Authenticator.JoinHost]),
	// with the host's id, the key (whose Networks the host joins: the
	// application adds it to them) and the host's JSON as it was sent,
	// without its secrets. It returns the server configuration of the
	// answer: "server_config" of Netmaker's register route. The host has
	// joined whatever it returns; an error answers 500 and is logged. Nil
	// answers an empty object.
	HostJoined func(ctx context.Context, hostID string, key EnrollmentKey, host []byte) (serverConfig any, err error)

	// IsAdmin, when set, reports whether a user is an administrator, who
	// may create, list, revoke and delete enrollment keys over the
	// handler's routes (with a user token, or one of its access tokens
	// that may write; a read-only one only lists). Nil leaves them to the
	// master key alone.
	IsAdmin func(ctx context.Context, userName string) (bool, error)

	// Extensions are the optional packages (single sign-on, passkeys, a
	// factor of the application's own) that may log users in after a
	// proof of their own, trade pre-auth tokens and write audit events:
	// [New] registers each with the Authenticator it returns. An
	// [Extension] is registered with one Authenticator only.
	Extensions []*Extension

	// Wire chooses the bytes the handler writes: [WireSpec], the default,
	// or [WireNetmaker] for Netmaker's own clients.
	Wire WireProfile

	// NetmakerSecret, when set, has user and host tokens minted in the
	// format of Netmaker v1.4.0's own server and signed with this key,
	// the privatekey of the nm-jwt-secret record in the serverconf table
	// of Netmaker's database, so that an unchanged Netmaker server accepts
	// them; the bearer check accepts them too, and no token Netmaker
	// minted itself (see netmakertoken.go). At least 32 bytes; never
	// logged. Nil keeps this package's format.
	NetmakerSecret []byte
	// NetmakerUser names a user as Netmaker holds it, for the claims of a
	// Netmaker user token: the name Netmaker keys the user by, which its
	// server looks up, and the user's platform role (platform_role_id).
	// username is as [PrepareUsername] returns it. It is called once a
	// login is granted, while the record is held for the update that
	// grants it: it must not call the Store, and should answer from what
	// the application read of the user for this login. An error fails the
	// login as a Store fault does. Required with NetmakerSecret.
	NetmakerUser func(username string) (name, role string, err error)

	// OnEvent, when set, receives every audit event with the context of
	// the call that caused it: the request's context for an event of the
	// handler or the middleware, the caller's for a method called
	// directly. [Event.Client] names the client. It runs on the caller's
	// goroutine and must not block.
	OnEvent func(ctx context.Context, e Event)

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
	def(&c.AccessTokenTTL, 90*24*time.Hour)
	def(&c.MaxAccessTokenTTL, 366*24*time.Hour)
	if c.MaxAccessTokens == 0 {
		c.MaxAccessTokens = 100
	}
	def(&c.StatusCacheTTL, 2*time.Second)
	def(&c.StoreTimeout, 3*time.Second)
	if c.PasswordHashQueue == 0 {
		c.PasswordHashQueue = defaultHashQueue
	}
	if c.HostLoginConcurrency <= 0 {
		c.HostLoginConcurrency = 4 * runtime.NumCPU()
	}
	if c.HostLoginQueue == 0 {
		c.HostLoginQueue = 16384
	}
	if c.HostWriteQueue == 0 {
		c.HostWriteQueue = defaultHostWriteQueue
	}
	def(&c.QueueTimeout, defaultQueueTimeout)
	if c.ClientRate == 0 {
		c.ClientRate = 1
	}
	if c.ClientBurst == 0 {
		c.ClientBurst = 20
	}
	if c.TokenCacheSize == 0 {
		c.TokenCacheSize = 2000000
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

// PrincipalKind says what kind of credential authenticated a request:
// [KindMaster] (the master key), [KindUser] (a user token), [KindHost] (a
// host token), [KindNode] (a node token) or [KindAccessToken] (a user's
// personal access token). [Authenticator.Require] admits by kind.
type PrincipalKind string

// The kinds of [Principal]: the master key, a user, host or node token, and
// a personal access token.
const (
	KindMaster PrincipalKind = "master"
	KindUser   PrincipalKind = "user"
	KindHost   PrincipalKind = "host"
	KindNode   PrincipalKind = "node"
	// KindAccessToken is a personal access token of a user (see
	// [Authenticator.CreateAccessToken]): Name is its user, TokenID its
	// id, and its scope is in ReadOnly and [Principal.Networks].
	KindAccessToken PrincipalKind = "access_token"
)

// Principal is the authenticated identity of a request. It travels in the
// request context; see [FromContext].
type Principal struct {
	Kind PrincipalKind `json:"kind"`
	// Name is the username, host id or node id. It is empty for the master
	// key, which thus never shares a name with an account (no username,
	// host id or node id is empty, and a user may be named "master"):
	// tell the master key by its Kind, or with [Principal.IsMaster].
	Name string `json:"name,omitempty"`
	// Network is the network of a node token.
	Network string `json:"network,omitempty"`
	// TOTP reports that the token came from a login that passed a second
	// factor: a TOTP or recovery code, or a factor the application checked
	// itself ([Extension.RedeemPreAuth], [Extension.LoginVerified]).
	TOTP bool `json:"totp,omitempty"`
	// IssuedAt and ExpiresAt bound the token; zero for the master key.
	IssuedAt  time.Time `json:"issuedAt,omitzero"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	// TokenID is the id of the token: a JWT's jti, an access token's id;
	// empty for the master key.
	TokenID string `json:"tokenId,omitempty"`
	// ReadOnly marks an access token limited to reads (see
	// [Principal.Permits]).
	ReadOnly bool `json:"readOnly,omitempty"`

	// networks is an access token's network scope, nil for every
	// network. It is shared by the checks of one token and never changed.
	networks *networkScope
	// generation is the account generation the token was minted under;
	// absent for the master key and for node tokens bound to no host.
	generation generationClaim
}

// IsMaster reports whether p is the master key.
func (p Principal) IsMaster() bool { return p.Kind == KindMaster }

type principalKey struct{}

// newContext returns a copy of ctx carrying p.
func newContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, &p)
}

// FromContext returns the principal stored in ctx by the bearer middleware.
// The value under the context's key is a *Principal, or the
// *bearerContext of a request that passed [Authenticator.Middleware] or
// [Authenticator.Require], so that reading it copies no Principal into an
// interface.
func FromContext(ctx context.Context) (Principal, bool) {
	switch v := ctx.Value(principalKey{}).(type) {
	case *Principal:
		return *v, true
	case *bearerContext:
		return v.p.principal(), true
	}
	return Principal{}, false
}

// kindFromContext returns the kind of the principal stored in ctx, as
// FromContext finds it.
func kindFromContext(ctx context.Context) (PrincipalKind, bool) {
	switch v := ctx.Value(principalKey{}).(type) {
	case *Principal:
		return v.Kind, true
	case *bearerContext:
		return v.p.kind(), true
	}
	return "", false
}

// Authenticator logs hosts and users in, runs TOTP enrollment and
// verification, and checks bearer credentials. It is safe for concurrent
// use; build it with [New].
type Authenticator struct {
	cfg   Config
	store Store
	// guard is store, as its own type: it also runs the application's
	// hooks under the Store deadline.
	guard   *guardedStore
	ring    *keyRing
	minter  *tokenMinter
	bearer  *tokenVerifier
	preAuth *tokenVerifier
	hasher  *passwordHasher
	// hostGate admits host logins. Both gates let an account in first at
	// an address it logged in rightly from (see Authenticator.entrant).
	hostGate *admission
	// known is what the host gate places a login by (see knownhosts.go).
	known  *knownset.Set
	tokens *tokenCache
	status *statusCache[accountStatus]
	// access keeps the access tokens; nil when the Store does not.
	access  *guardedTokens
	clients *clientLimiter
	// writes queues the writes of right host logins; nil when the Store
	// does not batch them.
	writes *hostWriter
	log    *slog.Logger
}

// New validates cfg, fills its defaults and returns an Authenticator.
func New(cfg Config) (*Authenticator, error) {
	if err := checkStore(cfg.Store); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	for _, d := range []time.Duration{cfg.UserTokenTTL, cfg.PreAuthTokenTTL, cfg.HostTokenTTL, cfg.NodeTokenTTL, cfg.EnrollmentTTL, cfg.ReenrollWindow, cfg.StoreTimeout, cfg.AccessTokenTTL, cfg.MaxAccessTokenTTL, cfg.QueueTimeout} {
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
	minter, err := newTokenMinter(ring, cfg.Issuer, cfg.Rand)
	if err != nil {
		return nil, err
	}
	ttl := [numKinds]time.Duration{
		kindUser:    cfg.UserTokenTTL,
		kindPreAuth: cfg.PreAuthTokenTTL,
		kindHost:    cfg.HostTokenTTL,
		kindNode:    cfg.NodeTokenTTL,
	}
	if minter.netmaker, err = newNetmakerFormat(&cfg, ttl); err != nil {
		return nil, err
	}
	// Every Store call, the bearer check's included, goes through the
	// guard: under the deadline, its failures answered as the server's.
	store := newGuardedStore(cfg)
	access := store.accessTokens()
	var accessStore AccessTokenStore
	if access != nil {
		accessStore = access
	}
	hasher := newPasswordHasher(cfg.PasswordHashConcurrency, cfg.PasswordHashQueue, cfg.Rand)
	hasher.gate = hashGate(cfg.PasswordHashConcurrency, cfg.PasswordHashQueue, cfg.QueueTimeout)
	a := &Authenticator{
		cfg:      cfg,
		store:    store,
		guard:    store,
		ring:     ring,
		minter:   minter,
		bearer:   newTokenVerifier(ring, cfg.Issuer, cfg.Now, ttl, kindUser, kindHost, kindNode),
		preAuth:  newTokenVerifier(ring, cfg.Issuer, cfg.Now, ttl, kindPreAuth),
		hasher:   hasher,
		hostGate: newAdmission(cfg.HostLoginConcurrency, max(cfg.HostLoginQueue, 0), cfg.QueueTimeout),
		known:    newKnownHosts(),
		tokens:   newTokenCache(cfg.TokenCacheSize),
		status:   newStatusCache(cfg.StatusCacheTTL, cfg.StatusCacheSize, loadStatus(store, accessStore)),
		access:   access,
		clients:  newClientLimiter(cfg),
		writes:   newHostWriter(cfg.Store, cfg.HostWriteQueue, cfg.Logger),
		log:      cfg.Logger,
	}
	if a.writes != nil {
		a.writes.lost = func(id string) { a.dropHost(id, false) }
	}
	if err := registerExtensions(cfg.Extensions, a); err != nil {
		return nil, err
	}
	go a.loadKnownHosts()
	return a, nil
}

// registerExtensions registers each of exts with a, or none of them when
// one is nil or already registered.
func registerExtensions(exts []*Extension, a *Authenticator) error {
	seen := make(map[*Extension]bool, len(exts))
	for _, e := range exts {
		switch {
		case e == nil:
			return errors.New("nmauth: Config.Extensions holds a nil Extension")
		case seen[e] || e.auth.Load() != nil:
			return errors.New("nmauth: Config.Extensions: an Extension is registered twice")
		}
		seen[e] = true
	}
	for i, e := range exts {
		if err := e.register(a); err != nil {
			for _, done := range exts[:i] {
				done.auth.Store(nil)
			}
			return err
		}
	}
	return nil
}

func (a *Authenticator) now() time.Time { return a.cfg.Now() }

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
	if err := errors.Join(nameErr, pwErr); err != nil {
		return UserLogin{}, a.failUnknown(ctx, KindUser, username, pw)
	}
	var out UserLogin
	granted := EventLoginSucceeded
	t := loginTarget{kind: KindUser, name: name, unknown: ErrInvalidCredentials, update: func(ctx context.Context, fn func(account) error) error {
		return a.store.UpdateUser(ctx, name, func(u *User) error { return fn(userAccount(u)) })
	}, granted: &granted}
	other := false
	err := a.login(ctx, t, pw, a.askSecondFactor(name, &other), func(acc account, iat time.Time) error {
		var err error
		if other {
			out, err = a.grantPreAuth(acc.user, iat)
		} else {
			out, err = a.grantUser(ctx, acc.user, iat)
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

// grantUser mints what a user's right password earns, inside the atomic
// update that granted it: a user token, or with TOTP on a pre-auth token
// (see grantPreAuth).
func (a *Authenticator) grantUser(ctx context.Context, u *User, iat time.Time) (UserLogin, error) {
	if u.TOTPEnabled() {
		return a.grantPreAuth(u, iat)
	}
	ttl, err := a.userTokenTTL(ctx, u.Name)
	if err != nil {
		return UserLogin{}, err
	}
	gen := u.State.v.Generation
	tok, _, err := a.minter.mint(mintArgs{kind: kindUser, subject: u.Name, issuedAt: iat, ttl: ttl, generation: &gen})
	return UserLogin{UserName: u.Name, AuthToken: tok}, err
}

// userTokenTTL is the lifetime of the token that a login of the user
// named name earns in ctx: [Config.UserTokenLifetime]'s answer, at most
// [Config.UserTokenTTL].
func (a *Authenticator) userTokenTTL(ctx context.Context, name string) (time.Duration, error) {
	longest := a.cfg.UserTokenTTL
	if a.cfg.UserTokenLifetime == nil {
		return longest, nil
	}
	d, err := a.cfg.UserTokenLifetime(ctx, name)
	if err != nil {
		a.guard.log.storeFailed("user token lifetime", err)
		return 0, fmt.Errorf("%w: user token lifetime: %w", ErrStoreUnavailable, err)
	}
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

// failUnknown spends the time of a real check of pw, so that an unknown
// name cannot be told from a wrong password: a digest for a host's
// machine secret, an argon2id run otherwise.
func (a *Authenticator) failUnknown(ctx context.Context, kind PrincipalKind, name string, pw secret.Presented) error {
	if pw.Machine {
		a.ring.dummyMachineCheck(name, pw.Text)
	} else if err := a.hasher.verifyDummy(ctx, pw.Text); err != nil {
		return err
	}
	a.emit(ctx, Event{Type: EventLoginFailed, Kind: kind, Name: safeName(name)})
	return ErrInvalidCredentials
}

// loginTarget is the account a login is for: a user or a host, reached
// through the Store's atomic update of its kind.
type loginTarget struct {
	kind   PrincipalKind
	name   string
	update func(ctx context.Context, fn func(account) error) error
	// read reads the account once, without a lock. It is set for hosts,
	// whose secret may be a machine secret, and nil for users, whose
	// passwords never are.
	read func(ctx context.Context) (account, error)
	// unknown is the error for an account the Store does not hold.
	unknown error
	// granted, when set, is the event of a granted login, which grant
	// sets: a user's password that earned a pre-auth token is
	// [EventLoginSecondFactorRequired]. Otherwise it is
	// [EventLoginSucceeded].
	granted *EventType
}

// grantedEvent is the event of t's granted login.
func (t loginTarget) grantedEvent() EventType {
	if t.granted != nil && *t.granted != "" {
		return *t.granted
	}
	return EventLoginSucceeded
}

// identified is a stored credential as a login identified its format
// (see hashfmt.Identify), so that it is identified once: the host path
// identifies what it reads, and the rest of the login reuses it for the
// same credential.
type identified struct {
	hash string
	as   hashfmt.Format
	ok   bool
}

// format is the format of the stored credential hash: as identified when
// it is the one identified, else identified now.
func (r identified) format(hash string) hashfmt.Format {
	if r.ok && r.hash == hash {
		return r.as
	}
	return hashfmt.Identify(hash)
}

// errHashChanged stops a grant whose account got another password hash
// while the password was being checked.
var errHashChanged = errors.New("nmauth: password hash changed during login")

// maxHashChanges bounds how often a login checks the password again
// against a hash that changed under it.
const maxHashChanges = 2

// errHashChangedTooOften answers a login whose account's secret kept
// changing under it: a fault of the moment, not a wrong password.
var errHashChangedTooOften = fmt.Errorf("%w: the password changed during the login", ErrStoreUnavailable)

// login is the one login path of users, hosts and nodes. A host whose
// stored credential is a machine-secret digest takes [loginMachine];
// every other account, in order:
//
//  1. a hashing slot is taken, the slots of the house argon2id's threads,
//     so that an overload refuses the attempt before anything is counted;
//  2. one atomic update checks the client's and the account's backoff and
//     counts the attempt as a failure, so that concurrent guesses are all
//     counted and a Store that cannot record refuses right and wrong
//     passwords alike;
//  3. the password is checked against the hash that update read, once
//     the login holds a slot for each thread the check runs: a stored
//     argon2 hash of more lanes than the house's waits for the others
//     first (see [passwordHasher.grow]), and may then still be refused
//     503, its attempt counted, as a rare hash of another system's can;
//  4. admit, when set, decides whether a right password may go on; its
//     refusal undoes the counting, since the password was right;
//  5. a second atomic update ([Authenticator.grantLogin]) grants the
//     login only if the hash is still the one checked and the account is
//     not disabled: it resets the counters and calls grant, which mints
//     the token with the generation read in that same update. A token is
//     thus never minted for a password that a concurrent change replaced,
//     nor under a generation that a concurrent revocation moved past.
//
// grant gets the time to put in the token.
func (a *Authenticator) login(ctx context.Context, t loginTarget, pw secret.Presented,
	admit func(ctx context.Context) error, grant func(acc account, now time.Time) error) error {
	// The login waits for its turn first; its deadline, for its Store
	// calls and hooks, starts once it has one, so that a login that waited
	// behind a burst still has the whole of StoreTimeout. The queue's own
	// bound, QueueTimeout, bounds the wait.
	parent := ctx
	var read identified
	if t.read != nil {
		handled, err := a.loginHostTurn(parent, t, pw, &read, admit, grant)
		if handled {
			return err
		}
	}
	if err := a.hasher.acquire(parent, a.entrant(parent, t)); err != nil {
		return err
	}
	held := houseThreads
	defer func() { a.hasher.release(held) }()
	ctx, cancel := context.WithTimeout(parent, a.cfg.StoreTimeout)
	defer cancel()
	client := clientKey(ctx)
	now := a.now()
	var hash string
	var disabled bool
	err := t.update(ctx, func(acc account) error {
		if wait := takeAttempt(acc, client, now); wait > 0 {
			return &RetryError{Reason: ErrThrottled, RetryAfter: wait}
		}
		hash, disabled = *acc.hash, *acc.disabled
		return nil
	})
	switch {
	case errors.Is(err, ErrThrottled):
		a.emit(ctx, Event{Type: EventLoginThrottled, Kind: t.kind, Name: t.name})
		return err
	case errors.Is(err, ErrNotFound):
		a.hasher.checkDummy(pw.Text)
		a.emit(ctx, Event{Type: EventLoginFailed, Kind: t.kind, Name: t.name})
		return t.unknown
	case err != nil:
		return err
	}
	deadline, _ := ctx.Deadline()
	for changes := 0; ; changes++ {
		left := time.Until(deadline)
		hashed := time.Now()
		format := read.format(hash)
		ok, upgrade, err := a.checkCredential(parent, t, format, hash, pw.Text, &held)
		if err != nil {
			return err
		}
		// A disabled account answers as a wrong password does, before
		// admit can tell a right one apart by refusing it otherwise.
		if !ok || disabled {
			a.emit(ctx, Event{Type: EventLoginFailed, Kind: t.kind, Name: t.name})
			return ErrInvalidCredentials
		}
		// The hash's own time, and its wait for the slots of its
		// threads, do not count against the deadline.
		deadline = deadline.Add(time.Since(hashed))
		current, err := a.admitAndGrant(parent, left, t, hash, a.newCredential(t, format, pw, upgrade), client, admit, grant)
		switch {
		case errors.Is(err, errHashChanged) && changes < maxHashChanges:
			hash = current
			continue
		case errors.Is(err, errHashChanged):
			return errHashChangedTooOften
		case err == nil && t.read != nil:
			// The host's next logins from client wait with the known at
			// the host gate.
			a.known.Add(t.name, client)
		}
		return err
	}
}

// loginHostTurn runs [Authenticator.loginMachine] in a host login's turn
// at the host gate, under a deadline of StoreTimeout from when the turn
// comes. A host with a password hash leaves the gate before it waits for
// a hashing slot, so that password logins never hold up machine secrets.
// A login granted from the cache of machine credentials (see
// hostCredential) reads no Store and takes no turn: it costs a digest and
// a signature.
func (a *Authenticator) loginHostTurn(parent context.Context, t loginTarget, pw secret.Presented, read *identified,
	admit func(ctx context.Context) error, grant func(acc account, now time.Time) error) (handled bool, err error) {
	client := clientKey(parent)
	if e := a.cachedHost(t.name, client, a.now()); e != nil && e.checks(t.name, pw.Text) {
		// Such a grant writes nothing, and its one call out, admit (a
		// hook that the Store guard runs under StoreTimeout of its own),
		// needs no deadline from here: the login arms no timer.
		_, err := a.grantMachine(parent, t, e.account(t.name, client), pw, false, client, nil, admit, grant)
		return true, err
	}
	if err := a.hostGate.Acquire(parent, a.hostEntrant(parent, t, client)); err != nil {
		return true, err
	}
	defer a.hostGate.Release(1)
	ctx, cancel := context.WithTimeout(parent, a.cfg.StoreTimeout)
	defer cancel()
	handled, err = a.loginMachine(ctx, t, pw, read, admit, grant)
	if handled && err == nil {
		// The host's next logins from client wait with the known at the
		// host gate. One granted from the cache is known already: the
		// read that made the entry added the host's known clients.
		a.known.Add(t.name, client)
	}
	return handled, err
}

// admitAndGrant runs the steps of a login after its password's hash,
// admit and grantLogin, in the time left of the login's deadline. A right
// password that admit or grant refuses (a MAC address change the host may
// not make, say) is no failure either.
func (a *Authenticator) admitAndGrant(parent context.Context, left time.Duration, t loginTarget, hash, credential, client string,
	admit func(ctx context.Context) error, grant func(acc account, now time.Time) error) (string, error) {
	ctx, cancel := context.WithTimeout(parent, left)
	defer cancel()
	if admit != nil {
		if err := admit(ctx); err != nil {
			return "", a.refuseRightPassword(ctx, t, hash, client, err)
		}
	}
	current, err := a.grantLogin(ctx, t, hash, credential, client, grant)
	if errors.Is(err, ErrForbidden) {
		return "", a.refuseRightPassword(ctx, t, hash, client, err)
	}
	return current, err
}

// loginMachine is the login of a host whose stored credential is a
// machine-secret digest; handled is false for any other, which takes the
// rest of [Authenticator.login]. A clean success costs one read (none
// when [Authenticator.loginHostTurn] grants it from the cache of machine
// credentials), one digest and one signature, and writes nothing: the
// token carries the generation read, so a revocation or a new secret
// that moves it on refuses the token as it refuses every older one. A write happens only
// when something changes: failures to reset, a client address not yet
// known to the host, a digest under a root secret other than the first;
// with a [HostBatchStore] it waits for the next batch (see
// [Authenticator.grantMachine]).
//
// Unlike a password, a machine secret's attempt is counted after the
// check, and only when it fails: guessing a 128-bit secret is hopeless
// however many guesses slip through at once, and a guess still gets no
// verdict unless its failure is recorded, so a Store that cannot record
// answers a wrong secret 503, never 401. docs/security.md
// says why this keeps every guarantee of the count before the check.
//
// read is what it read and identified of a stored credential that is no
// machine-secret digest, for the rest of the login.
func (a *Authenticator) loginMachine(ctx context.Context, t loginTarget, pw secret.Presented, read *identified,
	admit func(ctx context.Context) error, grant func(acc account, now time.Time) error) (handled bool, err error) {
	client := clientKey(ctx)
	for changes := 0; changes <= maxHashChanges; changes++ {
		cache := a.hostCacheBefore(t.name)
		acc, err := t.read(ctx)
		var format hashfmt.Format
		if err == nil {
			format = hashfmt.Identify(*acc.hash)
			*read = identified{hash: *acc.hash, as: format, ok: true}
			// What other replicas made known places this one's logins too.
			a.rememberKnown(t.name, *acc.clients)
		}
		if err != nil || format != hashfmt.MachineDigest {
			a.dropHost(t.name, false)
		}
		switch {
		case errors.Is(err, ErrNotFound) && pw.Machine:
			a.ring.dummyMachineCheck(t.name, pw.Text)
			// The store work of a wrong secret's count (countFailure): an
			// update, which a SQLStore commits for a missing record too,
			// so that the answer's time does not tell which ids are held,
			// and a store that cannot count refuses both alike.
			if err := t.update(ctx, func(account) error { return nil }); err != nil && !errors.Is(err, ErrNotFound) {
				return true, err
			}
			a.emit(ctx, Event{Type: EventLoginFailed, Kind: t.kind, Name: t.name})
			return true, t.unknown
		case errors.Is(err, ErrNotFound):
			return false, nil // the rest of login spends an argon2id run
		case err != nil:
			return true, err
		case format != hashfmt.MachineDigest:
			return false, nil
		}
		now := a.now()
		if wait := attemptWait(acc, client, now); wait > 0 {
			a.emit(ctx, Event{Type: EventLoginThrottled, Kind: t.kind, Name: t.name})
			return true, &RetryError{Reason: ErrThrottled, RetryAfter: wait}
		}
		hash := *acc.hash
		ok, upgrade, err := a.checkMachine(t, hash, pw.Text)
		if err != nil {
			return true, err
		}
		if ok && !*acc.disabled {
			// A read with nothing to write is cached as read; one with a
			// write replaces what the cache held with the host as the
			// queued write leaves it (seeded), or else drops it.
			clean := !upgrade && !grantChanges(acc, client)
			var seeded bool
			seeded, err = a.grantMachine(ctx, t, acc, pw, upgrade, client, &cache, admit, grant)
			switch {
			case clean && err == nil:
				a.keepHost(cache, t.name, acc)
			case !clean && !seeded:
				a.dropHost(t.name, false)
			}
		} else {
			err = a.countFailure(ctx, t, hash, client)
			// A failure counted, or a disabled host, is seen by the next
			// login at once; so is a Store that could not count.
			a.dropHost(t.name, true)
		}
		if !errors.Is(err, errHashChanged) {
			return true, err
		}
	}
	return true, errHashChangedTooOften
}

// grantMachine grants the login of a right machine secret, minting its
// token from the record read: without a write when it changes nothing,
// else with a write queued for the next batch (see [HostBatchStore]), or
// through [Authenticator.grantLogin] when the Store does not batch or the
// queue is full. Nothing was counted, so a refusal by admit or by grant
// (a MAC address the host may not use) has nothing to undo.
//
// With cache, what the cache held before the read, a queued write first
// puts in the cache the host as the write leaves it (see seedHost), unless
// the Store is failing to take writes; seeded reports whether the cache
// holds it once the login is granted. A write made by the login itself
// keeps it only if made.
func (a *Authenticator) grantMachine(ctx context.Context, t loginTarget, acc account, pw secret.Presented, upgrade bool,
	client string, cache *hostCacheState, admit func(ctx context.Context) error, grant func(acc account, now time.Time) error) (seeded bool, err error) {
	if admit != nil {
		if err := admit(ctx); err != nil {
			return false, err
		}
	}
	write := upgrade || grantChanges(acc, client)
	credential := ""
	if write {
		// Only a machine digest, checked or cached, is granted here.
		credential = a.newCredential(t, hashfmt.MachineDigest, pw, upgrade)
		if a.writes == nil {
			_, err := a.grantLogin(ctx, t, *acc.hash, credential, client, grant)
			return false, err
		}
	}
	if err := grant(acc, a.now()); err != nil {
		return false, err
	}
	// The token carries the generation read, so the write can wait for
	// the next batch: a disable or a new secret meanwhile moves the
	// generation on and refuses the token, and the write, which applies
	// only to the digest checked on a host not disabled, undoes neither.
	// A full queue makes the write now, with the token minted in it.
	// The host is seeded before the write is queued, so that the writer,
	// which drops the host's entry when the write does not apply as read,
	// comes after it.
	if write {
		w := newHostWrite(t.name, acc, credential, client)
		seeded = cache != nil && !a.writes.failing.Load() && a.seedHost(*cache, t.name, acc, &w)
		if !a.writes.enqueue(w) {
			_, err := a.grantLogin(ctx, t, *acc.hash, credential, client, grant)
			return seeded && err == nil, err
		}
	}
	a.emit(ctx, Event{Type: t.grantedEvent(), Kind: t.kind, Name: t.name})
	return seeded, nil
}

// checkCredential checks a secret against an account's stored credential,
// of the format the caller identified once from it: a machine-secret
// digest or a password hash. The caller holds *held hashing slots; a
// password hash whose check runs more threads takes as many first (see
// [passwordHasher.grow]), whose error, of the gate, is returned as it is.
// A credential that cannot be read, or whose parameters are beyond the
// bounds of a login's work, is a fault of the data, never a wrong
// password, and nothing is computed on it. The error names the account
// and what is wrong, never the hash; the route that answers 500 logs it,
// once.
func (a *Authenticator) checkCredential(ctx context.Context, t loginTarget, format hashfmt.Format, stored, secret string, held *int) (ok, upgrade bool, err error) {
	if format == hashfmt.MachineDigest {
		return a.checkMachine(t, stored, secret)
	}
	hash, err := hashfmt.Parse(format, stored)
	if err != nil {
		return false, false, credentialFault(t, err)
	}
	if err := a.hasher.grow(ctx, held, hash.Threads()); err != nil {
		return false, false, err
	}
	if ok, upgrade, err = a.hasher.engines().Check(hash, secret); err != nil {
		return false, false, credentialFault(t, err)
	}
	return ok, upgrade, nil
}

// checkMachine is checkCredential for a machine-secret digest, which
// takes no hashing slot.
func (a *Authenticator) checkMachine(t loginTarget, stored, secret string) (ok, upgrade bool, err error) {
	if ok, upgrade, err = a.ring.checkMachineSecret(stored, t.name, secret); err != nil {
		return false, false, credentialFault(t, err)
	}
	return ok, upgrade, nil
}

// credentialFault is the error of t's stored credential that cannot be
// checked: a fault of the data, naming the account and what is wrong.
func credentialFault(t loginTarget, err error) error {
	return fmt.Errorf("%w: password hash of %s %q: %w", ErrDataFault, t.kind, t.name, err)
}

// newCredential returns what a right secret is stored as from now on, or
// "" to keep what is stored: a host's machine secret moves to its digest
// under the first root secret, from a password hash or from another root
// secret's digest; a password hash weaker than a new one would be is
// hashed again. format is that of the credential stored, as identified
// for its check. The caller of an argon2id run holds a hashing slot.
func (a *Authenticator) newCredential(t loginTarget, format hashfmt.Format, pw secret.Presented, upgrade bool) string {
	switch {
	case pw.Machine && (upgrade || format != hashfmt.MachineDigest):
		return a.ring.digestMachineSecret(t.name, pw.Text)
	case !upgrade:
		return ""
	}
	hash, err := a.hasher.hashHeld(pw.Text)
	if err != nil {
		a.log.Warn("password hash upgrade skipped", "kind", string(t.kind), "name", t.name, "err", err)
		return ""
	}
	return hash
}

// grantLogin grants a login in one atomic update, if the account's stored
// credential is still the one checked (else errHashChanged, with the
// current one) and the account is not disabled: it marks the client
// known, resets the counters, stores newCredential when set, and calls
// grant. It emits the login's outcome, but for errHashChanged and for
// grant's refusal of a right secret ([ErrForbidden]). The client marked
// known is what places the account's next logins from it first at the
// gates (see Authenticator.entrant).
func (a *Authenticator) grantLogin(ctx context.Context, t loginTarget, checked, newCredential, client string,
	grant func(acc account, now time.Time) error) (current string, err error) {
	err = t.update(ctx, func(acc account) error {
		if *acc.hash != checked {
			current = *acc.hash
			return errHashChanged
		}
		if *acc.disabled {
			return ErrInvalidCredentials
		}
		grantAttempt(acc, client)
		if newCredential != "" {
			*acc.hash = newCredential
		}
		return grant(acc, a.now())
	})
	switch {
	case errors.Is(err, errHashChanged), errors.Is(err, ErrForbidden):
		return current, err
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrInvalidCredentials):
		a.emit(ctx, Event{Type: EventLoginFailed, Kind: t.kind, Name: t.name})
		return "", ErrInvalidCredentials
	case err != nil:
		return "", err
	}
	a.emit(ctx, Event{Type: t.grantedEvent(), Kind: t.kind, Name: t.name})
	return "", nil
}

// countFailure counts a machine secret that did not pass (wrong, or right
// for a disabled host) in one atomic update, which checks the backoff
// again, and answers it: [ErrInvalidCredentials] once counted; the
// Store's error, never a verdict, when it could not count; errHashChanged
// when the secret changed since it was checked.
func (a *Authenticator) countFailure(ctx context.Context, t loginTarget, checked, client string) error {
	now := a.now()
	err := t.update(ctx, func(acc account) error {
		if *acc.hash != checked {
			return errHashChanged
		}
		if wait := takeAttempt(acc, client, now); wait > 0 {
			return &RetryError{Reason: ErrThrottled, RetryAfter: wait}
		}
		return nil
	})
	switch {
	case errors.Is(err, ErrThrottled):
		a.emit(ctx, Event{Type: EventLoginThrottled, Kind: t.kind, Name: t.name})
		return err
	case err == nil, errors.Is(err, ErrNotFound):
		a.emit(ctx, Event{Type: EventLoginFailed, Kind: t.kind, Name: t.name})
		return ErrInvalidCredentials
	}
	return err
}

// refuseRightPassword answers a refusal of a right password, by admit or by
// grant. A right password is never a failure: the attempt counted before
// the check is undone, if the hash is still the one checked, so that a
// host asking for a network it is not a member of, or coming from a MAC
// address it may not use, is not throttled out of its own logins.
func (a *Authenticator) refuseRightPassword(ctx context.Context, t loginTarget, hash, client string, refusal error) error {
	err := t.update(ctx, func(acc account) error {
		if *acc.hash == hash {
			grantAttempt(acc, client)
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return refusal
}

// HostLogin is the result of a host login, or of a node login: a node
// token for one network, named in Network ("" for a host token).
type HostLogin struct {
	AuthToken string `json:"authToken"`
	ID        string `json:"id"`
	Network   string `json:"network,omitempty"`
}

// LoginHost checks a host's id and password, applies the MAC address
// policy (see [Config.RefuseMACChange]) and returns a host token. An
// unknown host id returns [ErrUnknownHost], which matches
// [ErrInvalidCredentials], after the same work as a wrong password.
// Attempts are counted as [Authenticator.LoginUser] counts them.
func (a *Authenticator) LoginHost(ctx context.Context, id, mac, password string) (HostLogin, error) {
	tok, id, err := a.loginHost(ctx, id, mac, password, KindHost, func(id string) mintArgs {
		return mintArgs{kind: kindHost, subject: id, ttl: a.cfg.HostTokenTTL}
	}, nil)
	if err != nil {
		return HostLogin{}, err
	}
	return HostLogin{AuthToken: tok, ID: id}, nil
}

// LoginNode checks a host's credentials as [Authenticator.LoginHost] does
// and returns a node token for network, whose subject is the host id. The
// host must be a member of network by [Config.NodeMember], asked only once
// the credentials are right; a host that is not answers [ErrForbidden],
// and so does every host when NodeMember is nil. The token dies with the
// host's tokens (disable, delete, revoke).
func (a *Authenticator) LoginNode(ctx context.Context, network, id, mac, password string) (HostLogin, error) {
	if !validNetwork(network) {
		return HostLogin{}, ErrInvalidNetwork
	}
	admit := func(ctx context.Context, id string) error {
		if a.cfg.NodeMember == nil {
			return ErrForbidden
		}
		ok, err := a.guard.ask(ctx, "node membership", func(ctx context.Context) (bool, error) { return a.cfg.NodeMember(ctx, network, id) })
		if err != nil {
			return err
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
		return HostLogin{}, err
	}
	return HostLogin{AuthToken: tok, ID: id, Network: network}, nil
}

// loginHost runs the login path for a host: it checks the credentials,
// asks admit (when set) whether the login may go on, applies the MAC
// policy and mints the token that token describes. kind is what the audit
// events name.
func (a *Authenticator) loginHost(ctx context.Context, id, mac, password string, kind PrincipalKind,
	token func(id string) mintArgs, admit func(ctx context.Context, id string) error) (string, string, error) {
	id, idErr := PrepareHostID(id)
	mac, macErr := prepareMAC(mac)
	if macErr != nil {
		return "", "", macErr
	}
	pw, pwErr := secret.Prepare(password, true)
	if err := errors.Join(idErr, pwErr); err != nil {
		if err := a.failUnknown(ctx, kind, id, pw); !errors.Is(err, ErrInvalidCredentials) {
			return "", "", err
		}
		return "", "", ErrUnknownHost
	}
	t := loginTarget{kind: kind, name: id, unknown: ErrUnknownHost, update: func(ctx context.Context, fn func(account) error) error {
		return a.store.UpdateHost(ctx, id, func(h *Host) error { return fn(hostAccount(h)) })
	}, read: func(ctx context.Context) (account, error) {
		h, err := a.guard.getHostLogin(ctx, id)
		return hostAccount(&h), err
	}}
	var admitHost func(context.Context) error
	if admit != nil {
		admitHost = func(ctx context.Context) error { return admit(ctx, id) }
	}
	var tok, registered string
	err := a.login(ctx, t, pw, admitHost, func(acc account, iat time.Time) error {
		h := acc.host
		registered = h.MACAddress
		if a.cfg.RefuseMACChange && h.MACAddress != "" && mac != h.MACAddress {
			return fmt.Errorf("%w: MAC address %q is not the host's", ErrForbidden, mac)
		}
		args := token(id)
		args.issuedAt, args.generation, args.mac = iat, &h.State.v.Generation, mac
		var err error
		tok, _, err = a.minter.mint(args)
		return err
	})
	if errors.Is(err, ErrForbidden) && registered != "" {
		a.emit(ctx, Event{Type: EventHostMACRefused, Kind: kind, Name: id})
	}
	if err != nil {
		return "", "", err
	}
	if registered != "" && mac != "" && mac != registered {
		a.emit(ctx, Event{Type: EventHostMACChanged, Kind: kind, Name: id})
	}
	if pw.Machine {
		// A machine secret costs a digest, no hash: its attempt is given
		// back every time, so that a fleet's back-to-back logins are not
		// slowed, and a flood of them takes no hashing turn.
		markProved(ctx)
	} else {
		markProvedAccount(ctx, accountKey{kind: KindHost, name: id})
	}
	return tok, id, nil
}

// IssueNodeToken mints a node token for the application's own node
// authentication route, after the application has checked the node. The
// network and the node id take the form of a host id (1 to 128 printable
// characters without spaces), else [ErrInvalidNetwork] or [ErrInvalidHost];
// the node id is prepared as a host id is ([PrepareHostID]), so that a
// UUID names the same node in every spelling. ctx is
// the request's, as for every other method: once it is done, no token is
// minted and its error is returned. Under [Authenticator.Limit], the
// request whose context it is given gets its attempt back.
func (a *Authenticator) IssueNodeToken(ctx context.Context, network, nodeID string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if !validNetwork(network) {
		return "", ErrInvalidNetwork
	}
	nodeID, err := PrepareHostID(nodeID)
	if err != nil {
		return "", err
	}
	tok, _, err := a.minter.mint(mintArgs{kind: kindNode, subject: nodeID, network: network, issuedAt: a.now(), ttl: a.cfg.NodeTokenTTL})
	if err != nil {
		return "", err
	}
	markProved(ctx)
	return tok, nil
}
