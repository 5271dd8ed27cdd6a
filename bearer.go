package nmauth

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/maypok86/otter/v2"
	"github.com/maypok86/otter/v2/stats"
)

// CheckBearer checks one bearer credential: the master key, or a user, host
// or node token this Authenticator issued. A pre-auth token is refused here.
// A user or host token is refused once its account is deleted, disabled or
// revoked.
func (a *Authenticator) CheckBearer(ctx context.Context, credential string) (Principal, error) {
	if credential == "" {
		return Principal{}, ErrUnauthenticated
	}
	now := a.now()
	d, p, ok := a.tokens.get(credential)
	if !ok {
		if a.cfg.MasterKey.Check(credential) {
			a.emit(ctx, Event{Type: EventMasterKeyUsed, Kind: KindMaster, Name: "master"})
			return Principal{Kind: KindMaster}, nil
		}
		var err error
		if p, err = a.parseBearer(credential); err != nil {
			return Principal{}, err
		}
		a.tokens.put(d, p, now)
	}
	if !now.Before(p.ExpiresAt) {
		return Principal{}, ErrUnauthenticated
	}
	if err := a.checkStanding(ctx, p, now); err != nil {
		return Principal{}, err
	}
	return p, nil
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
		generation: c.Generation,
	}, nil
}

// checkStanding refuses a token whose user or host is gone, disabled, or
// at another generation than the one the token was minted under. A node
// token minted by [Authenticator.LoginNode] stands or falls with its host;
// one minted by [Authenticator.IssueNodeToken] by [Config.NodeTokenValid].
func (a *Authenticator) checkStanding(ctx context.Context, p Principal, now time.Time) error {
	var k accountKey
	switch {
	case p.Kind == KindUser:
		k = accountKey{kind: KindUser, name: p.Name}
	case p.Kind == KindHost, p.Kind == KindNode && p.generation.present:
		k = accountKey{kind: KindHost, name: p.Name}
	case p.Kind == KindNode && a.cfg.NodeTokenValid != nil:
		return a.checkNodeToken(ctx, p)
	default:
		return nil
	}
	st, err := a.status.get(ctx, k, now)
	if err != nil {
		return err
	}
	if !st.admits(p) {
		return ErrUnauthenticated
	}
	return nil
}

// checkNodeToken asks [Config.NodeTokenValid] about a node token from
// [Authenticator.IssueNodeToken].
func (a *Authenticator) checkNodeToken(ctx context.Context, p Principal) error {
	ok, err := a.cfg.NodeTokenValid(ctx, p)
	if err != nil {
		return fmt.Errorf("nmauth: node token check: %w", err)
	}
	if !ok {
		return ErrUnauthenticated
	}
	return nil
}

// tokenDigest is the SHA-256 of a bearer token. The token cache is keyed by
// it rather than by the token, so the cache holds no credential, and a hit
// still proves the very token that verified: finding another token with
// the same digest is as hard as breaking SHA-256.
type tokenDigest [sha256.Size]byte

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
	c    *otter.Cache[tokenDigest, Principal]
	door *doorkeeper
}

// newTokenCache returns a cache of at most size tokens, or one that holds
// none when size is negative. now is the clock the token expiry is read
// against.
func newTokenCache(size int, now func() time.Time) *tokenCache {
	if size <= 0 {
		return &tokenCache{}
	}
	return &tokenCache{
		c: otter.Must(&otter.Options[tokenDigest, Principal]{
			MaximumSize: size,
			// The counter is striped across CPUs, so concurrent readers
			// seldom write the same word to count their hits.
			StatsRecorder: stats.NewCounter(),
			ExpiryCalculator: otter.ExpiryWritingFunc(func(e otter.Entry[tokenDigest, Principal]) time.Duration {
				return e.Value.ExpiresAt.Sub(now())
			}),
		}),
		door: newDoorkeeper(size),
	}
}

// get returns the token's digest, for put, and its principal if the token
// is in the cache. A disabled cache spends no hash.
func (c *tokenCache) get(token string) (tokenDigest, Principal, bool) {
	if c.c == nil {
		return tokenDigest{}, Principal{}, false
	}
	// Hashing the string's own bytes, read only, spares a copy of the
	// token on every request.
	d := tokenDigest(sha256.Sum256(unsafe.Slice(unsafe.StringData(token), len(token))))
	p, ok := c.c.GetIfPresent(d)
	return d, p, ok
}

// put remembers the principal of a token that verified, until it expires,
// if the token verified once before lately; otherwise it notes the token
// in the doorkeeper only.
func (c *tokenCache) put(d tokenDigest, p Principal, now time.Time) {
	if c.c == nil || !now.Before(p.ExpiresAt) || !c.door.admit(&d) {
		return
	}
	c.c.Set(d, p)
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

// admit reports whether d was added since the doorkeeper last cleared, and
// adds it. The digest is SHA-256, so its words serve as the hashes.
func (k *doorkeeper) admit(d *tokenDigest) bool {
	seen := true
	for i := range doorkeeperHashes {
		bit := binary.LittleEndian.Uint64(d[8*i:]) & k.mask
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
}

// admits reports whether an account in this standing accepts p's token:
// one minted under the account's current generation.
func (st accountStatus) admits(p Principal) bool {
	return st.active && p.generation.present && p.generation.value == st.generation
}

// loadStatus returns the function that reads an account's standing from s.
// A missing account is one in no standing, not an error.
func loadStatus(s Store) func(context.Context, accountKey) (accountStatus, error) {
	return func(ctx context.Context, k accountKey) (accountStatus, error) {
		var st accountStatus
		var err error
		switch k.kind {
		case KindUser:
			var u User
			u, err = s.GetUser(ctx, k.name)
			st = accountStatus{active: !u.Disabled, generation: u.Generation}
		case KindHost:
			var h Host
			h, err = s.GetHost(ctx, k.name)
			st = accountStatus{active: !h.Disabled, generation: h.Generation}
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

// statusCache keeps what the bearer check read of each account's standing
// for a short time, so that the check does not read the Store on every
// request. V is what it keeps of an account.
//
// Entries live a random time between half the TTL and the TTL, so that
// accounts first read together are not all read again together, and the
// cache is an otter cache bounded in entries, which drops one entry at a
// time when full.
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
	c      *otter.Cache[accountKey, statusEntry[V]]
	seed   maphash.Seed
	epochs *[statusEpochs]atomic.Uint64
	// counts holds how many calls of get an entry answered (hits) and how
	// many read the Store (misses). get counts them rather than otter,
	// which would count as a hit an entry that get refuses as stale.
	counts *stats.Counter
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
	c.counts = stats.NewCounter()
	c.c = otter.Must(&otter.Options[accountKey, statusEntry[V]]{
		MaximumSize: size,
		ExpiryCalculator: otter.ExpiryWritingFunc(func(e otter.Entry[accountKey, statusEntry[V]]) time.Duration {
			return e.Value.until.Sub(e.Value.fetched)
		}),
	})
	return c
}

// epoch returns the epoch counter of the account k.
func (c *statusCache[V]) epoch(k accountKey) *atomic.Uint64 {
	return &c.epochs[maphash.String(c.seed, k.name)&(statusEpochs-1)]
}

// get returns what the cache knows of k, reading the Store when it knows
// nothing it may still trust at now.
func (c *statusCache[V]) get(ctx context.Context, k accountKey, now time.Time) (V, error) {
	if c.c == nil {
		return c.load(ctx, k)
	}
	epoch := c.epoch(k).Load()
	if e, ok := c.c.GetIfPresent(k); ok && e.epoch == epoch && !now.Before(e.fetched) && now.Before(e.until) {
		c.counts.RecordHits(1)
		return e.v, nil
	}
	c.counts.RecordMisses(1)
	v, err := c.load(ctx, k)
	if err != nil {
		return v, err
	}
	c.c.Set(k, statusEntry[V]{v: v, fetched: now, until: now.Add(c.lifetime()), epoch: epoch})
	return v, nil
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
	k := accountKey{kind: kind, name: name}
	c.epoch(k).Add(1)
	c.c.Invalidate(k)
}
