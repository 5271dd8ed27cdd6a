// Package tokencache is the table behind nmauth's bearer check: what it
// keeps of each token that verified, found by a seeded hash of the token,
// read without a lock, bounded in tokens, and a doorkeeper that lets a
// token in on its second verification. What a slot holds, V, is the
// caller's; the caller reads and writes it in S, V's atomic form. The
// bearer check's V is an [Entry], a token's signature and its principal
// kept compact ([Principal]), and its S a [SlotEntry].
package tokencache

import (
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2/stats"
)

// Value is S, the atomic form in a slot of a value V: every field is read
// and written atomically, so that a reader that finds a slot unchanged
// once it has read it holds the fields of one write.
type Value[V any] interface {
	// Load reads the slot's value.
	Load() V
	// Store writes v into the slot.
	Store(v V)
	// Expired reports whether the slot's token has expired at now.
	Expired(now time.Time) bool
}

// Cache remembers a value for each token that verified, until the token
// expires, so the check on every request costs a hash and a lookup rather
// than a parse. The zero Cache holds nothing; [Cache.Init] makes one that
// holds tokens.
//
// It is one array of slots, open addressing with linear probing: a
// token's key (a 64-bit hash under a seed drawn at random by each process)
// picks its home slot, and the token is in the first slot from there on
// that holds its key, before the first empty one. A slot holds all that a
// hit reads: the key and the value. So a hit reads the token's home slot
// and, at the loads the table keeps, often a slot or two beside it, and
// nothing else: at a million tokens, most of a check's cost is reads that
// miss the processor's caches, and they are all in one place.
//
// Readers take no lock and write nothing but a striped hit counter. A
// slot's version is odd while its writer changes it, and counts its
// writes in 64 bits, so it never comes back to a value; a reader that
// finds it odd, or changed, or the slot's key changed, once it has read
// the slot, misses rather than waits (the token is then parsed). Every
// field is read and written atomically, so a hit returns the fields of
// one write of the slot. Writers take one mutex, and a writer that finds
// it held does not wait but leaves its token uncached. Slots are emptied
// only by a new table, so a probe that meets an empty slot stops.
//
// The table starts small and grows by a quarter whenever four fifths of
// it is in use, up to a quarter more slots than the cache holds tokens; a
// new table takes every unexpired token of the old one. So while the cache
// holds fewer tokens than its size, a token the doorkeeper admits is held
// until it expires, unless another writer held the mutex (it is then
// stored on a later check). Once it holds its size, a new token takes the
// slot of an expired token on its path (from its home slot to the first
// empty one), else of a live one drawn at random among the first eight
// there, else (its home slot is empty) it stays uncached: no list is kept
// in order of use, so a hit writes nothing.
//
// A token is stored on its second verification, not its first: the
// doorkeeper remembers the tokens seen once lately, so that a fleet larger
// than the cache, whose tokens come back only after the cache has
// forgotten them, costs a parse per check and not also an insertion and an
// eviction.
type Cache[V, S any, PS interface {
	*S
	Value[V]
}] struct {
	table atomic.Pointer[Table[S]]
	// size is the most tokens the cache holds; maxSlots the most slots
	// its table grows to.
	size, maxSlots int
	seed           maphash.Seed
	door           *doorkeeper
	// mu is held by the writer of the table, which also sets count, the
	// number of slots in use (expired entries among them).
	mu    sync.Mutex
	count atomic.Int64
	counts
}

// counts counts the lookups of a cache. Its methods are not generic, so
// that they cost a caller what the counter's own do.
type counts struct{ c *stats.Counter }

// Hit and Miss count a lookup of the cache, for [Cache.Stats].
func (c counts) Hit()  { c.c.RecordHits(1) }
func (c counts) Miss() { c.c.RecordMisses(1) }

// Slot is one token's place in the table: a key of 0 is an empty slot.
// Every field is read and written atomically; version orders a writer's
// changes with a reader's reads (see [Cache]).
type Slot[S any] struct {
	key     atomic.Uint64
	version atomic.Uint64
	value   S
}

// Table is the cache's table, replaced whole when it grows.
type Table[S any] struct{ slots []Slot[S] }

// Init makes c a cache of at most size tokens, or one that holds none
// when size is not positive. It is called before c is used.
func (c *Cache[V, S, PS]) Init(size int) {
	if size <= 0 {
		return
	}
	c.size = size
	c.maxSlots = size + max(size/4, 1)
	c.seed = maphash.MakeSeed()
	c.door = newDoorkeeper(size)
	c.counts = counts{stats.NewCounter()}
	c.table.Store(&Table[S]{slots: make([]Slot[S], min(c.maxSlots, 512))})
}

// On reports whether the cache holds tokens at all.
func (c *Cache[V, S, PS]) On() bool { return c.door != nil }

// Key returns the token's key: never 0, the key of an empty slot. It is
// not to be called on a cache that is not On.
func (c *Cache[V, S, PS]) Key(token string) uint64 {
	return max(maphash.String(c.seed, token), 1)
}

// Table returns the cache's table as it is now, for [Table.Find].
func (c *Cache[V, S, PS]) Table() *Table[S] { return c.table.Load() }

// Find returns the slot that holds key and its version, for
// [Slot.Unchanged]; nil if there is none. The caller reads the slot's
// Value between the two: a reader that reads the value in its own code
// spends no call through the cache's type parameters, and Find and
// Unchanged are inlined into it, which the hit path of a bearer check
// wants. A value is there whatever its expiry; the caller checks that,
// and that the value is its token's (another token may have the same
// key), and then counts a Hit or a Miss.
func (t *Table[S]) Find(key uint64) (*Slot[S], uint64) {
	i := t.home(key)
	for range t.slots {
		s := &t.slots[i]
		switch s.key.Load() {
		case key:
			return s, s.version.Load()
		case 0:
			return nil, 0
		}
		if i++; i == uint64(len(t.slots)) {
			i = 0
		}
	}
	return nil, 0
}

// Value is the slot's value, to be read between [Table.Find] and
// [Slot.Unchanged].
func (s *Slot[S]) Value() *S { return &s.value }

// Unchanged reports whether s, which [Table.Find] returned for key with
// the version ver, holds the value of key as one write left it: a value
// read from it since is whole.
func (s *Slot[S]) Unchanged(key, ver uint64) bool {
	return ver&1 == 0 && s.key.Load() == key && s.version.Load() == ver
}

// Load is Find, the value's Load and Unchanged in one: the value held
// under key, and whether there is one.
func (c *Cache[V, S, PS]) Load(key uint64) (V, bool) {
	if s, ver := c.Table().Find(key); s != nil {
		if v := PS(&s.value).Load(); s.Unchanged(key, ver) {
			return v, true
		}
	}
	var zero V
	return zero, false
}

// Admit reports whether the token of key was seen since the doorkeeper
// last cleared, and notes it: a token is put on its second sight.
func (c *Cache[V, S, PS]) Admit(key uint64) bool { return c.door.admit(key) }

// Put stores v under key, a token's that verified at now, unless
// another writer holds the table.
func (c *Cache[V, S, PS]) Put(key uint64, v V, now time.Time) {
	if !c.mu.TryLock() {
		return
	}
	defer c.mu.Unlock()
	t := c.table.Load()
	if len(t.slots) < c.maxSlots && int(c.count.Load()) >= len(t.slots)*4/5 {
		t = c.grow(t, now)
	}
	s, empty := c.slot(t, key, now, int(c.count.Load()) < c.size)
	if s == nil {
		return
	}
	c.store(s, key, v)
	if empty {
		c.count.Add(1)
	}
}

// Stats returns the hits and misses counted and the number of slots in
// use.
func (c *Cache[V, S, PS]) Stats() (hits, misses uint64, size int) {
	if !c.On() {
		return 0, 0, 0
	}
	s := c.counts.c.Snapshot()
	return s.Hits, s.Misses, int(c.count.Load())
}

// Slots is the number of slots of the cache's table.
func (c *Cache[V, S, PS]) Slots() int {
	if !c.On() {
		return 0
	}
	return len(c.table.Load().slots)
}

// home returns the index of key's home slot.
func (t *Table[S]) home(key uint64) uint64 {
	hi, _ := bits.Mul64(key, uint64(len(t.slots)))
	return hi
}

// store writes v under key into s. It is called with the cache's mu
// held, or on a table no reader has yet.
func (c *Cache[V, S, PS]) store(s *Slot[S], key uint64, v V) {
	s.version.Add(1)
	PS(&s.value).Store(v)
	s.key.Store(key)
	s.version.Add(1)
}

// slot returns the slot that key's value is to take in t, and whether it
// is empty: the key's own slot; else, if fill, the first empty one on its
// path; else an expired value's on its path; else, if not fill, a live
// one's drawn at random among the first eight on its path. It returns nil
// when there is none of these. It is called with the cache's mu held.
func (c *Cache[V, S, PS]) slot(t *Table[S], key uint64, now time.Time, fill bool) (*Slot[S], bool) {
	n := uint64(len(t.slots))
	var old *Slot[S]
	var live [8]*Slot[S]
	nlive := 0
probe:
	for i, j := t.home(key), uint64(0); j < n; j++ {
		s := &t.slots[i]
		switch k := s.key.Load(); {
		case k == key:
			return s, false
		case k == 0:
			if fill {
				return s, true
			}
			break probe
		case old == nil && PS(&s.value).Expired(now):
			old = s
		case nlive < len(live):
			live[nlive] = s
			nlive++
		}
		if i++; i == n {
			i = 0
		}
	}
	switch {
	case old != nil:
		return old, false
	case !fill && nlive > 0:
		return live[rand.IntN(nlive)], false
	}
	return nil, false
}

// grow replaces t by a table with a quarter more slots, at most
// c.maxSlots, that holds every unexpired value of t, and returns it. It is
// called with c.mu held, when t has fewer than c.maxSlots. Readers go on
// reading t until the new table is in place.
func (c *Cache[V, S, PS]) grow(t *Table[S], now time.Time) *Table[S] {
	n := &Table[S]{slots: make([]Slot[S], min(len(t.slots)+max(len(t.slots)/4, 1), c.maxSlots))}
	count := 0
	for i := range t.slots {
		s := &t.slots[i]
		key := s.key.Load()
		if key == 0 || PS(&s.value).Expired(now) {
			continue
		}
		// n has more slots than t, so every value finds an empty one.
		if ns, _ := c.slot(n, key, now, true); ns != nil {
			c.store(ns, key, PS(&s.value).Load())
			count++
		}
	}
	c.count.Store(int64(count))
	c.table.Store(n)
	return n
}
