package tokencache

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// entry is what the caches of these tests keep of a token: its number,
// a name, and its expiry in Unix seconds.
type entry struct {
	id      uint64
	name    *string
	expires int64
}

// atomicEntry is an entry as a slot holds it.
type atomicEntry struct {
	id      atomic.Uint64
	name    atomic.Pointer[string]
	expires atomic.Int64
}

func (s *atomicEntry) Load() entry {
	return entry{id: s.id.Load(), name: s.name.Load(), expires: s.expires.Load()}
}

func (s *atomicEntry) Store(e entry) {
	s.id.Store(e.id)
	s.name.Store(e.name)
	s.expires.Store(e.expires)
}

func (s *atomicEntry) Expired(now time.Time) bool { return s.expires.Load() <= now.Unix() }

type testCache = Cache[entry, atomicEntry, *atomicEntry]

// newTestCache returns a cache of at most size tokens.
func newTestCache(size int) *testCache {
	c := new(testCache)
	c.Init(size)
	return c
}

// put is a bearer check's put of the token of key: into the doorkeeper,
// and into the cache on its second sight.
func put(c *testCache, key uint64, e entry, now time.Time) {
	if c.Admit(key) {
		c.Put(key, e, now)
	}
}

// has reports whether c holds the entry of token id under key.
func has(c *testCache, key, id uint64) bool {
	e, ok := c.Load(key)
	return ok && e.id == id
}

// TestCacheTakesExpiredSlots: when the cache is full, a new token takes
// the slot of an expired one on its path before any live one's.
func TestCacheTakesExpiredSlots(t *testing.T) {
	c := newTestCache(6)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tok := func(i int) string { return fmt.Sprintf("h.c%d.%s", i, strings.Repeat("A", 43)) }
	add := func(i int, ttl time.Duration) {
		t.Helper()
		key := c.Key(tok(i))
		// The doorkeeper takes a token on its second put, and clears
		// itself after as many new tokens as the cache holds.
		for range 3 {
			if !has(c, key, uint64(i)) {
				put(c, key, entry{id: uint64(i), expires: now.Add(ttl).Unix()}, now)
			}
		}
		if !has(c, key, uint64(i)) {
			t.Fatalf("token %d not cached", i)
		}
	}
	table := c.table.Load()
	if n := len(table.slots); n != 7 {
		t.Fatalf("%d slots", n)
	}
	// Token 0 expires soon; it is the first, so it is in its home slot.
	// Five live tokens fill the cache.
	add(0, time.Second)
	for i := 1; i <= 5; i++ {
		add(i, time.Hour)
	}
	now = now.Add(2 * time.Second)
	// A new token whose home slot is the expired token's.
	next := 6
	for table.home(c.Key(tok(next))) != table.home(c.Key(tok(0))) {
		next++
	}
	add(next, time.Hour)
	for i := 1; i <= 5; i++ {
		if !has(c, c.Key(tok(i)), uint64(i)) {
			t.Errorf("live token %d was dropped while an expired one was held", i)
		}
	}
	if has(c, c.Key(tok(0)), 0) {
		t.Error("the expired token is still held")
	}
	if c.table.Load() != table || c.count.Load() != 6 {
		t.Errorf("the table changed, or holds %d tokens", c.count.Load())
	}
}

// TestCacheGrowKeepsEveryToken: tokens whose keys share one home slot in
// every table, as many as the cache holds, are each cached on their
// second put and all still held after every growth of the table.
func TestCacheGrowKeepsEveryToken(t *testing.T) {
	const size = 2000
	c := newTestCache(size)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	// Key i is home at slot 0 of every table of fewer than 2^52 slots.
	tables := map[*Table[atomicEntry]]bool{}
	for i := 1; i <= size; i++ {
		// Twice, and once more for the doorkeeper clearing itself.
		for range 3 {
			put(c, uint64(i), entry{id: uint64(i), expires: now.Add(time.Hour).Unix()}, now)
		}
		tables[c.table.Load()] = true
		for _, j := range []int{1, i / 2, i} {
			if j := uint64(max(j, 1)); !has(c, j, j) {
				t.Fatalf("after %d puts, token %d is not held", i, j)
			}
		}
	}
	// 512 slots, then a quarter more each time, up to 2,500.
	if len(tables) != 9 {
		t.Errorf("the table grew %d times, want 8", len(tables)-1)
	}
	for i := uint64(1); i <= size; i++ {
		if !has(c, i, i) {
			t.Errorf("token %d is not held", i)
		}
	}
	if c.count.Load() != size {
		t.Errorf("%d tokens held, want %d", c.count.Load(), size)
	}
	if hits, misses, n := c.Stats(); hits != 0 || misses != 0 || n != size {
		t.Errorf("Stats %d, %d, %d: want 0 hits and misses counted and %d tokens", hits, misses, n, size)
	}
}

// TestCacheReaderNeverMixesWrites: while a writer rewrites one slot over
// and over with the entries of two tokens under the same key (as a
// collision of keys would), readers of the slot find each entry whole.
// Run it with -race.
func TestCacheReaderNeverMixesWrites(t *testing.T) {
	c := newTestCache(100)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	names := [2]string{"alpha", "beta-and-more"}
	entries := [2]entry{
		{id: 1, name: &names[0], expires: now.Add(time.Hour).Unix()},
		{id: 2, name: &names[1], expires: now.Add(2 * time.Hour).Unix()},
	}
	const key = 42
	c.Put(key, entries[0], now)
	// The readers look up until the writer, after at least 100,000
	// writes, sees that they found both entries (or gives up after ten
	// million).
	var hits [2]atomic.Int64
	var readers sync.WaitGroup
	done := make(chan struct{})
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for i := 0; ; i++ {
				if i%1024 == 0 {
					select {
					case <-done:
						return
					default:
					}
				}
				e, ok := c.Load(key)
				if !ok {
					continue
				}
				w := int(e.id) - 1
				if w < 0 || w > 1 || e != entries[w] {
					t.Errorf("read %+v, no entry written whole", e)
					return
				}
				hits[w].Add(1)
			}
		}()
	}
	for i := 0; i < 10_000_000 && (i < 100_000 || hits[0].Load() == 0 || hits[1].Load() == 0); i++ {
		c.Put(key, entries[i%2], now)
	}
	close(done)
	readers.Wait()
	if hits[0].Load() == 0 || hits[1].Load() == 0 {
		t.Errorf("hits %d and %d: the readers did not read both entries", hits[0].Load(), hits[1].Load())
	}
}

// TestCacheOff: a cache of no size holds nothing and counts nothing.
func TestCacheOff(t *testing.T) {
	c := newTestCache(-1)
	if c.On() || c.Slots() != 0 {
		t.Fatal("a cache of no size is on")
	}
	if hits, misses, n := c.Stats(); hits != 0 || misses != 0 || n != 0 {
		t.Errorf("Stats %d, %d, %d", hits, misses, n)
	}
}
