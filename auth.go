package nmauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nmauth/nmauth/internal/httpx"
	"github.com/nmauth/nmauth/internal/knownset"
)

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
		return cachedPrincipal(&v.p), true
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
		return cachedKind(&v.p), true
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
	known *knownset.Set
	// scan fills known from the Store, once, in the background, from the
	// first use of the host-login gate (see startKnownScan).
	scan struct {
		once sync.Once
		ctx  context.Context
		stop context.CancelFunc
	}
	tokens *tokenCache
	status *statusCache
	// access keeps the access tokens; nil when the Store does not.
	access  *guardedTokens
	clients *httpx.Clients
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
	minter := &tokenMinter{ring: ring, issuer: cfg.Issuer, rand: cfg.Rand}
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
	hasher.Gate = hashGate(cfg.PasswordHashConcurrency, cfg.PasswordHashQueue, cfg.QueueTimeout)
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
		clients:  httpx.NewClients(cfg.TrustedProxies, cfg.Logger, cfg.ClientRate, cfg.ClientBurst, cfg.Now()),
		writes:   newHostWriter(cfg.Store, cfg.HostWriteQueue, cfg.Logger),
		log:      cfg.Logger,
	}
	if a.writes != nil {
		a.writes.lost = func(id string) { a.dropHost(id, false) }
	}
	if err := registerExtensions(cfg.Extensions, a); err != nil {
		return nil, err
	}
	a.scan.ctx, a.scan.stop = context.WithCancel(context.Background())
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
