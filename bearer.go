package nmauth

import (
	"context"
	"crypto/subtle"
	"errors"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"
	"github.com/maypok86/otter/v2/stats"
)

// CheckBearer checks one bearer credential: the master key, a user, host
// or node token this Authenticator issued, or an access token it made
// ([Authenticator.CreateAccessToken]). A pre-auth token is refused here.
// A user or host token is refused once its account is deleted, disabled or
// revoked, or once it was logged out ([Authenticator.Logout]); an access
// token also once it is deleted.
func (a *Authenticator) CheckBearer(ctx context.Context, credential string) (Principal, error) {
	if credential == "" {
		return Principal{}, ErrUnauthenticated
	}
	now := a.now()
	key, e := a.tokens.get(credential, now)
	hit := e != nil
	if !hit {
		if a.cfg.MasterKey.Check(credential) {
			a.emit(ctx, Event{Type: EventMasterKeyUsed, Kind: KindMaster, Name: "master"})
			return Principal{Kind: KindMaster}, nil
		}
		var err error
		if e, err = a.newTokenEntry(ctx, credential, now); err != nil {
			return Principal{}, err
		}
		a.tokens.put(key, e, now)
	}
	// The status cache's hits are the token cache's, corrected here off
	// the path of a cached token that is checked (see statusCache.stats).
	reaches := e.account != nil && now.Before(e.p.ExpiresAt)
	if hit != reaches {
		a.status.countCorrection(hit)
	}
	if !now.Before(e.p.ExpiresAt) {
		return Principal{}, ErrUnauthenticated
	}
	if err := a.checkStanding(ctx, e, now); err != nil {
		return Principal{}, err
	}
	return e.p, nil
}

// newTokenEntry verifies a token the cache did not hold and returns its
// entry.
func (a *Authenticator) newTokenEntry(ctx context.Context, credential string, now time.Time) (*tokenEntry, error) {
	var p Principal
	var err error
	if strings.HasPrefix(credential, AccessTokenPrefix) {
		p, err = a.parseAccessToken(ctx, credential, now)
	} else {
		p, err = a.parseBearer(credential)
	}
	if err != nil {
		return nil, err
	}
	e := &tokenEntry{p: p, signature: signature(credential), account: a.status.ref(accountOf(p))}
	if p.Kind == KindAccessToken {
		e.token = a.status.ref(&accountKey{kind: KindAccessToken, name: p.TokenID})
	}
	return e, nil
}

func (a *Authenticator) parseBearer(token string) (Principal, error) {
	c, kind, err := a.bearer.verify(token)
	if err != nil {
		return Principal{}, err
	}
	return Principal{
		Kind:       kind.principalKind(),
		Name:       c.Subject,
		Network:    c.Network,
		TOTP:       c.TOTP,
		IssuedAt:   c.IssuedAt.Time,
		ExpiresAt:  c.ExpiresAt.Time,
		TokenID:    c.ID,
		generation: c.Generation,
	}, nil
}

// accountOf names the account whose standing decides p's token: its user,
// or its host for a host token and for a node token minted by
// [Authenticator.LoginNode]; nil for a node token minted by
// [Authenticator.IssueNodeToken], which [Config.NodeTokenValid] decides.
func accountOf(p Principal) *accountKey {
	switch {
	case p.Kind == KindUser, p.Kind == KindAccessToken:
		return &accountKey{kind: KindUser, name: p.Name}
	case p.Kind == KindHost, p.Kind == KindNode && p.generation.present:
		return &accountKey{kind: KindHost, name: p.Name}
	}
	return nil
}

// checkStanding refuses a token whose user or host is gone, disabled, or
// at another generation than the one the token was minted under, a token
// logged out, and an access token deleted. A node
// token minted by [Authenticator.LoginNode] stands or falls with its host;
// one minted by [Authenticator.IssueNodeToken] by [Config.NodeTokenValid].
func (a *Authenticator) checkStanding(ctx context.Context, e *tokenEntry, now time.Time) error {
	if e.account == nil {
		if e.p.Kind == KindNode && a.cfg.NodeTokenValid != nil {
			return a.checkNodeToken(ctx, e.p)
		}
		return nil
	}
	st, err := a.status.standing(ctx, e.account, now)
	if err != nil {
		return err
	}
	if !st.admits(&e.p) {
		return ErrUnauthenticated
	}
	if e.token == nil {
		return nil
	}
	// A second call of standing, which the token cache's hits leave out.
	a.status.countCorrection(false)
	if st, err = a.status.standing(ctx, e.token, now); err != nil {
		return err
	}
	if !st.active {
		return ErrUnauthenticated
	}
	a.noteUse(e.token, now)
	return nil
}

// checkNodeToken asks [Config.NodeTokenValid] about a node token from
// [Authenticator.IssueNodeToken].
func (a *Authenticator) checkNodeToken(ctx context.Context, p Principal) error {
	ok, err := a.guard.ask(ctx, "node token check", func(ctx context.Context) (bool, error) { return a.cfg.NodeTokenValid(ctx, p) })
	if err != nil {
		return err
	}
	if !ok {
		return ErrUnauthenticated
	}
	return nil
}

// tokenEntry is what the token cache keeps of a token that verified: its
// principal, its signature, and the account whose standing decides it.
//
// The cache is keyed by a 64-bit hash of the token under a seed drawn at
// random by each process, so no one can choose tokens that collide; and a
// hit must also bring the token's own signature, compared in constant
// time, so that a token which shares the hash of a cached one but differs
// in any byte of its header or claims is no hit either (it would need the
// very HMAC of another message). The entry keeps the signature and not the
// token: neither a signature alone nor the principal is a credential, and
// the two together give back no token, whose claims (its jti among them)
// the entry does not hold.
type tokenEntry struct {
	p         Principal
	signature string
	account   *accountRef[accountStatus]
	// token is an access token's own standing: whether it is still in
	// the Store. Nil for every other kind.
	token *accountRef[accountStatus]
}

// signature is the part of a token that a cache hit must bring: the last
// part of a compact JWS, its signature; an access token's check, the
// keyed digest of its id and secret. Neither is enough to rebuild the
// token.
func signature(token string) string {
	if strings.HasPrefix(token, AccessTokenPrefix) {
		return token[strings.LastIndexByte(token, '_')+1:]
	}
	return token[strings.LastIndexByte(token, '.')+1:]
}

// tokenCache remembers the principal of bearer tokens that verified, until
// they expire, so the check on every request costs a hash and a lookup
// rather than a parse. Only tokens whose signature was verified are
// stored.
//
// It is an otter cache: reads take no lock that other readers wait for,
// inserting and evicting cost the same whatever its size, and when it is
// full it drops the entries least likely to be read again (W-TinyLFU).
// A token is stored on its second verification, not its first: the
// doorkeeper remembers the tokens seen once lately, so that a fleet larger
// than the cache, whose tokens come back only after the cache has
// forgotten them, costs a parse per check and not also an insertion and an
// eviction.
type tokenCache struct {
	c     *otter.Cache[uint64, *tokenEntry]
	door  *doorkeeper
	seed  maphash.Seed
	clock *checkClock
}

// newTokenCache returns a cache of at most size tokens, or one that holds
// none when size is negative.
func newTokenCache(size int) *tokenCache {
	if size <= 0 {
		return &tokenCache{}
	}
	clock := &checkClock{}
	return &tokenCache{
		c: otter.Must(&otter.Options[uint64, *tokenEntry]{
			MaximumSize: size,
			// The counter is striped across CPUs, so concurrent readers
			// seldom write the same word to count their hits.
			StatsRecorder: stats.NewCounter(),
			Clock:         clock,
			ExpiryCalculator: otter.ExpiryWritingFunc(func(e otter.Entry[uint64, *tokenEntry]) time.Duration {
				return time.Duration(e.Value.p.ExpiresAt.UnixNano() - clock.NowNano())
			}),
		}),
		door:  newDoorkeeper(size),
		seed:  maphash.MakeSeed(),
		clock: clock,
	}
}

// get returns the token's key, for put, and its entry if the token is in
// the cache, else nil. A disabled cache spends no hash.
func (c *tokenCache) get(token string, now time.Time) (uint64, *tokenEntry) {
	if c.c == nil {
		return 0, nil
	}
	c.clock.advance(now)
	key := maphash.String(c.seed, token)
	e, ok := c.c.GetIfPresent(key)
	if !ok || subtle.ConstantTimeCompare([]byte(e.signature), []byte(signature(token))) != 1 {
		return key, nil
	}
	return key, e
}

// put remembers the entry of a token that verified, until it expires, if
// the token verified once before lately; otherwise it notes the token in
// the doorkeeper only.
func (c *tokenCache) put(key uint64, e *tokenEntry, now time.Time) {
	if c.c == nil || !now.Before(e.p.ExpiresAt) || !c.door.admit(key) {
		return
	}
	c.c.Set(key, e)
}

// checkClock is the token cache's clock: the time of the latest bearer
// check, by [Config.Now], to the millisecond, so that expiry follows the
// same clock as the check and a read of the cache costs no second reading
// of the time. It moves on once a millisecond at most, so the checks of
// two cores seldom write its word. It ticks never: expired entries go as
// the cache meets them, and its size bounds them meanwhile.
type checkClock struct{ nanos atomic.Int64 }

func (c *checkClock) NowNano() int64 { return c.nanos.Load() }

func (c *checkClock) Tick(time.Duration) <-chan time.Time { return nil }

func (c *checkClock) advance(now time.Time) {
	if n := now.UnixNano(); n-c.nanos.Load() >= int64(time.Millisecond) {
		c.nanos.Store(n)
	}
}

// doorkeeper is a Bloom filter of the token digests seen lately: it
// answers whether a digest was added since it last cleared itself, which
// it does after as many additions as the cache has room for. It may answer
// yes for a digest never added (about once in 200 when full, at worst), which costs
// a cache entry; and no for one added before it cleared, which costs one
// more parse. It never decides whether a token is accepted.
type doorkeeper struct {
	bits  []atomic.Uint64
	mask  uint64
	limit int64
	added atomic.Int64
}

// doorkeeperHashes is how many bits a digest sets; it spends at least 16
// bits per digest.
const doorkeeperHashes = 3

// newDoorkeeper returns a doorkeeper for a cache of size tokens.
func newDoorkeeper(size int) *doorkeeper {
	nbits := uint64(64)
	for nbits < 16*uint64(size) {
		nbits <<= 1
	}
	return &doorkeeper{bits: make([]atomic.Uint64, nbits/64), mask: nbits - 1, limit: int64(size)}
}

// admit reports whether key was added since the doorkeeper last cleared,
// and adds it. The key is a seeded hash; its two halves make the probes
// (double hashing).
func (k *doorkeeper) admit(key uint64) bool {
	seen := true
	step := key>>32 | 1
	for i := range uint64(doorkeeperHashes) {
		bit := (key + i*step) & k.mask
		w, m := &k.bits[bit/64], uint64(1)<<(bit%64)
		if w.Load()&m == 0 {
			seen = false
			w.Or(m)
		}
	}
	if !seen && k.added.Add(1) == k.limit {
		for i := range k.bits {
			k.bits[i].Store(0)
		}
		k.added.Store(0)
	}
	return seen
}

// accountStatus is what the bearer check needs to know of an account. It
// is built in loadStatus and read in admits only.
type accountStatus struct {
	active     bool
	generation uint64
	// loggedOut holds the ids of the user's tokens revoked by a logout
	// that have not expired yet.
	loggedOut []string
}

// admits reports whether an account in this standing accepts p's token:
// one minted under the account's current generation and not logged out.
func (st *accountStatus) admits(p *Principal) bool {
	return st.active && p.generation.present && p.generation.value == st.generation &&
		(len(st.loggedOut) == 0 || !slices.Contains(st.loggedOut, p.TokenID))
}

// loadStatus returns the function that reads an account's standing from s,
// or an access token's (active while it is stored) from tokens. A missing
// account or token is one in no standing, not an error.
func loadStatus(s Store, tokens AccessTokenStore) func(context.Context, accountKey) (accountStatus, error) {
	return func(ctx context.Context, k accountKey) (accountStatus, error) {
		var st accountStatus
		var err error
		switch k.kind {
		case KindUser:
			var u User
			u, err = s.GetUser(ctx, k.name)
			st = accountStatus{active: !u.Disabled, generation: u.State.Generation, loggedOut: loggedOutIDs(u.State.LoggedOut)}
		case KindAccessToken:
			if tokens == nil {
				return st, nil
			}
			_, err = tokens.GetAccessToken(ctx, k.name)
			st.active = err == nil
		case KindHost:
			var h Host
			h, err = s.GetHost(ctx, k.name)
			st = accountStatus{active: !h.Disabled, generation: h.State.Generation}
		}
		if errors.Is(err, ErrNotFound) {
			return accountStatus{}, nil
		}
		return st, err
	}
}

// accountKey names one user or host.
type accountKey struct {
	kind PrincipalKind
	name string
}

// statusEntry is one account's standing as the status cache holds it.
type statusEntry[V any] struct {
	v V
	// fetched and until bound the time, by Config.Now, in which v is
	// trusted.
	fetched, until time.Time
	// epoch is the account's epoch when the read that made v began.
	epoch uint64
}

// statusEpochs is the number of epoch counters of a status cache, a power
// of two.
const statusEpochs = 1 << 12

// accountRef is the status cache's place for one account: what it last
// read of the account's standing, shared by every cached token of the
// account, so that the check of a cached token reaches its account's
// standing through the token's entry without a second lookup.
type accountRef[V any] struct {
	key   accountKey
	epoch *atomic.Uint64
	cur   atomic.Pointer[statusEntry[V]]
	// touched is when an access token's use was last recorded, in Unix
	// nanoseconds (see noteUse).
	touched atomic.Int64
}

// statusCache keeps what the bearer check read of each account's standing
// for a short time, so that the check does not read the Store on every
// request. V is what it keeps of an account.
//
// Entries live a random time between half the TTL and the TTL, so that
// accounts first read together are not all read again together. Each
// account's place (an accountRef) is held by an otter cache bounded in
// entries, which drops one at a time when full, and by the cached tokens
// of the account, whose own bound holds theirs.
//
// A change made through the Authenticator calls forget after the Store has
// it. A read of the Store that began before that change may finish after
// the forget; its answer must not be kept. So each account has an epoch,
// which forget bumps: an entry is trusted only while its account's epoch
// is still the one read before its load began. Accounts share the epochs
// of a fixed table by the hash of their name, so the table's memory is
// bounded; a forget of one account therefore also makes the others on its
// counter read the Store once more, which costs a read and never
// correctness.
type statusCache[V any] struct {
	ttl    time.Duration
	load   func(context.Context, accountKey) (V, error)
	c      *otter.Cache[accountKey, *accountRef[V]]
	seed   maphash.Seed
	epochs *[statusEpochs]atomic.Uint64
	// misses counts the reads of the Store. The hits are the calls of
	// standing that read nothing: the token cache's hits, which it counts
	// already, less those that called no standing (lost), plus the calls
	// of standing for tokens the token cache did not answer (extra), less
	// the misses. So the check of a cached token adds to no counter here.
	misses, lost, extra atomic.Uint64
}

// countCorrection counts a bearer check that a token cache hit does not
// count as a standing call, or one that it does not count though it is.
func (c *statusCache[V]) countCorrection(tokenHit bool) {
	if tokenHit {
		c.lost.Add(1)
	} else {
		c.extra.Add(1)
	}
}

// newStatusCache returns a cache that keeps up to size accounts for up to
// ttl each, loading them with load; a negative ttl or size keeps none.
func newStatusCache[V any](ttl time.Duration, size int, load func(context.Context, accountKey) (V, error)) *statusCache[V] {
	c := &statusCache[V]{ttl: ttl, load: load}
	if ttl <= 0 || size <= 0 {
		return c
	}
	c.seed = maphash.MakeSeed()
	c.epochs = new([statusEpochs]atomic.Uint64)
	c.c = otter.Must(&otter.Options[accountKey, *accountRef[V]]{MaximumSize: size})
	return c
}

// epoch returns the epoch counter of the account k.
func (c *statusCache[V]) epoch(k accountKey) *atomic.Uint64 {
	return &c.epochs[maphash.String(c.seed, k.name)&(statusEpochs-1)]
}

// ref returns the place of the account k, nil for none.
func (c *statusCache[V]) ref(k *accountKey) *accountRef[V] {
	switch {
	case k == nil:
		return nil
	case c.c == nil:
		return &accountRef[V]{key: *k}
	}
	if r, ok := c.c.GetIfPresent(*k); ok {
		return r
	}
	r, _ := c.c.SetIfAbsent(*k, &accountRef[V]{key: *k, epoch: c.epoch(*k)})
	return r
}

// standing returns what r holds of its account's standing, reading the
// Store when r holds nothing it may still trust at now. The caller must
// not change what it points to.
func (c *statusCache[V]) standing(ctx context.Context, r *accountRef[V], now time.Time) (*V, error) {
	if c.c == nil {
		v, err := c.load(ctx, r.key)
		return &v, err
	}
	epoch := r.epoch.Load()
	if e := r.cur.Load(); e != nil && e.epoch == epoch && !now.Before(e.fetched) && now.Before(e.until) {
		return &e.v, nil
	}
	c.misses.Add(1)
	v, err := c.load(ctx, r.key)
	if err != nil {
		return nil, err
	}
	e := &statusEntry[V]{v: v, fetched: now, until: now.Add(c.lifetime()), epoch: epoch}
	r.cur.Store(e)
	return &e.v, nil
}

// lifetime is a random time between half the TTL and the TTL.
func (c *statusCache[V]) lifetime() time.Duration {
	half := c.ttl / 2
	return c.ttl - rand.N(half+1)
}

// forget makes the cache read k's standing from the Store again, after a
// change made through this Authenticator; a read already under way when it
// is called is not kept.
func (c *statusCache[V]) forget(kind PrincipalKind, name string) {
	if c.c == nil {
		return
	}
	c.epoch(accountKey{kind: kind, name: name}).Add(1)
}
