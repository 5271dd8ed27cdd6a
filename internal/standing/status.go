package standing

import (
	"context"
	"sync/atomic"
	"time"
)

// Ref is a Status cache's place for one account, of key type K: what it
// last read of the account's standing V, shared by every cached token of
// the account, so that the check of a cached token reaches its account's
// standing through the token's entry without a second lookup. L is the
// account's cached login credential, for a host.
type Ref[K comparable, V, L any] struct {
	Key K
	// Epoch is the account's epoch counter; nil when the Status keeps
	// nothing.
	Epoch *atomic.Uint64
	cur   Slot[V]
	// Touched is when an access token's use was last recorded, in Unix
	// nanoseconds.
	Touched atomic.Int64
	// Login is a host's machine credential as its last clean login read
	// it; nil for others.
	Login atomic.Pointer[L]
}

// Status keeps what the bearer check read of each account's standing for
// a short time, so that the check does not read the Store on every
// request.
//
// Entries live a random time between half the TTL and the TTL (see
// [Slot.Set]). Each account's place (a Ref) is held by a cache bounded in
// entries, which drops one at a time when full, and by the cached tokens
// of the account, whose own bound holds theirs.
//
// A change to an account calls Forget after the Store has it. A read of
// the Store that began before that change may finish after the Forget;
// its answer must not be kept. So each account has an epoch, which Forget
// bumps: an entry is trusted only while its account's epoch is still the
// one read before its load began.
type Status[K comparable, V, L any] struct {
	TTL  time.Duration
	load func(context.Context, K) (V, error)
	// c holds the places of the accounts; nil when the Status keeps none.
	c *Cache[K, Ref[K, V, L]]
	// misses counts the reads of the Store. The hits are the calls of
	// Standing that read nothing: the token cache's hits, which it counts
	// already, less those that called no Standing (Lost), plus the calls
	// of Standing for tokens the token cache did not answer (Extra), less
	// the misses. So the check of a cached token adds to no counter here.
	misses, Lost, Extra atomic.Uint64
}

// NewStatus returns a Status that keeps up to size accounts for up to ttl
// each, loading them with load; name names a key for its epoch. A
// negative ttl or size keeps none.
func NewStatus[K comparable, V, L any](ttl time.Duration, size int, name func(K) string, load func(context.Context, K) (V, error)) *Status[K, V, L] {
	c := &Status[K, V, L]{TTL: ttl, load: load}
	if ttl > 0 && size > 0 {
		c.c = NewCache(size, name, func(k K, epoch *atomic.Uint64) *Ref[K, V, L] { return &Ref[K, V, L]{Key: k, Epoch: epoch} })
	}
	return c
}

// On reports whether the Status keeps anything.
func (c *Status[K, V, L]) On() bool { return c.c != nil }

// Epoch returns the epoch counter of the account k; the Status must be
// on.
func (c *Status[K, V, L]) Epoch(k K) *atomic.Uint64 { return c.c.Epoch(k) }

// Ref returns the place of the account k, nil for none.
func (c *Status[K, V, L]) Ref(k *K) *Ref[K, V, L] {
	switch {
	case k == nil:
		return nil
	case c.c == nil:
		return &Ref[K, V, L]{Key: *k}
	}
	return c.c.Place(*k)
}

// Peek returns the place of the account k if the Status holds one, else
// nil, adding none.
func (c *Status[K, V, L]) Peek(k K) *Ref[K, V, L] {
	if c.c == nil {
		return nil
	}
	return c.c.Peek(k)
}

// Standing returns what r holds of its account's standing, reading the
// Store when r holds nothing it may still trust at now. The caller must
// not change what it points to.
func (c *Status[K, V, L]) Standing(ctx context.Context, r *Ref[K, V, L], now time.Time) (*V, error) {
	if c.c == nil {
		v, err := c.load(ctx, r.Key)
		return &v, err
	}
	epoch := r.Epoch.Load()
	if e := r.cur.Load(); e != nil && e.Epoch == epoch && !now.Before(e.Fetched) && now.Before(e.Until) {
		return &e.V, nil
	}
	c.misses.Add(1)
	v, err := c.load(ctx, r.Key)
	if err != nil {
		return nil, err
	}
	return r.cur.Set(v, epoch, now, c.TTL), nil
}

// Forget makes the Status read k's standing from the Store again, after a
// change to it; a read already under way when it is called is not kept.
func (c *Status[K, V, L]) Forget(k K) {
	if c.c != nil {
		c.Epoch(k).Add(1)
	}
}

// Counts returns the hits, derived from the token cache's tokenHits (see
// Status.misses), the misses and the number of accounts held, an
// estimate; all zero while the Status keeps nothing.
func (c *Status[K, V, L]) Counts(tokenHits uint64) (hits, misses uint64, size int) {
	if c.c == nil {
		return 0, 0, 0
	}
	// The counters are read one after another while checks go on: a sum
	// that comes out below zero is one caught between them.
	misses = c.misses.Load()
	h := max(int64(tokenHits)-int64(c.Lost.Load())+int64(c.Extra.Load())-int64(misses), 0)
	return uint64(h), misses, c.c.EstimatedSize()
}
