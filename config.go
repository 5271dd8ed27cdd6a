package nmauth

import (
	"cmp"
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net/netip"
	"runtime"
	"time"

	"github.com/nmauth/nmauth/internal/hasher"
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
	// UserTokenTTL. It is asked once the secret is right, before the
	// update that grants the login (a TOTP code's, an extension's proof),
	// under the Store deadline as the other hooks are; an error fails the
	// login as a Store fault does (503), and counts no attempt.
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
	// background once it serves host logins and added by each right
	// login (see
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

// setDefaults fills in each field left at its zero value.
func (c *Config) setDefaults() {
	c.Issuer = cmp.Or(c.Issuer, "nmauth")
	c.UserTokenTTL = cmp.Or(c.UserTokenTTL, time.Hour)
	c.PreAuthTokenTTL = cmp.Or(c.PreAuthTokenTTL, 5*time.Minute)
	c.HostTokenTTL = cmp.Or(c.HostTokenTTL, 15*time.Minute)
	c.NodeTokenTTL = cmp.Or(c.NodeTokenTTL, 15*time.Minute)
	c.EnrollmentTTL = cmp.Or(c.EnrollmentTTL, 10*time.Minute)
	c.ReenrollWindow = cmp.Or(c.ReenrollWindow, 10*time.Minute)
	c.AccessTokenTTL = cmp.Or(c.AccessTokenTTL, 90*24*time.Hour)
	c.MaxAccessTokenTTL = cmp.Or(c.MaxAccessTokenTTL, 366*24*time.Hour)
	c.MaxAccessTokens = cmp.Or(c.MaxAccessTokens, 100)
	c.StatusCacheTTL = cmp.Or(c.StatusCacheTTL, 2*time.Second)
	c.StoreTimeout = cmp.Or(c.StoreTimeout, 3*time.Second)
	c.PasswordHashQueue = cmp.Or(c.PasswordHashQueue, hasher.DefaultQueue)
	if c.HostLoginConcurrency <= 0 {
		c.HostLoginConcurrency = 4 * runtime.NumCPU()
	}
	c.HostLoginQueue = cmp.Or(c.HostLoginQueue, 16384)
	c.HostWriteQueue = cmp.Or(c.HostWriteQueue, defaultHostWriteQueue)
	c.QueueTimeout = cmp.Or(c.QueueTimeout, defaultQueueTimeout)
	c.ClientRate = cmp.Or(c.ClientRate, 1)
	c.ClientBurst = cmp.Or(c.ClientBurst, 20)
	c.TokenCacheSize = cmp.Or(c.TokenCacheSize, 2000000)
	c.StatusCacheSize = cmp.Or(c.StatusCacheSize, 200000)
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
