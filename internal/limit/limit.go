// Package limit bounds how fast each client address may make attempts: a
// bucket of the generic cell rate algorithm per address, in a cache
// bounded in addresses, with a right credential's attempt given back, and
// the context of a limited request, which notes whether it proved a
// credential and of which account. It knows nothing of accounts beyond
// what its caller tells of each attempt: the address, the time, and the
// account proved.
package limit

import (
	"math"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"
)

// Limiter holds a bucket of the generic cell rate algorithm (GCRA) for
// each address: one atomic word, the bucket's theoretical arrival time
// (tat). Each attempt moves tat on by one interval, 1/rate, from now or
// from where it was if that is later; an attempt that would put tat more
// than burst intervals ahead of now is refused, and waits until it would
// not. So a bucket whose tat has passed is full, the same as a new one.
// Attempts of one address wait for each other only for a
// compare-and-swap.
//
// The buckets live in an otter cache: a lookup takes no lock that other
// lookups wait for, and adding or dropping an address costs the same at
// any size. Each bucket expires bucketSlack after the latest attempt plus
// the time to refill a whole burst: by then it is full whatever happened,
// so expiring it loses nothing and no sweep is needed. Past
// MaxClients addresses inside that time the cache drops the ones
// least likely to come back (W-TinyLFU), one at a time: a busy address,
// an attacker's included, keeps its bucket while addresses seen once
// come and go.
type Limiter struct {
	// interval is the time one attempt costs, in nanoseconds; span is
	// how far ahead of now tat may run, burst intervals.
	interval, span int64
	buckets        *otter.Cache[netip.Addr, *Bucket]
	clock          *attemptClock
	// wrongUntil is when no address can be past its limit any more by
	// wrong credentials; 0 once that time has passed (see NoteWrong).
	wrongUntil atomic.Int64
}

// MaxClients bounds a limiter's memory. With the defaults of nmauth
// (a burst of 20 at one a second) a bucket lives 21 s after its address's
// last attempt, so it holds every address while fewer than about 4,700
// new ones a second arrive: a million hosts logging in every 15 minutes
// bring 1,111.
const MaxClients = 100000

// bucketSlack is what a bucket lives past the time it takes to refill.
// otter leaves an entry's expiry as it was when a read would move it by a
// second or less, and its clock lags by up to clockStep, so without it a
// bucket could expire that much early.
const bucketSlack = time.Second + clockStep

// New returns a limiter of rate attempts a second after a burst of burst
// (at least one), whose clock starts at now.
func New(rate float64, burst int, now time.Time) *Limiter {
	burst = max(burst, 1)
	// The bound keeps span within int64 whatever rate is configured.
	interval := min(float64(time.Second)/rate, float64(math.MaxInt64/4)/float64(burst))
	l := &Limiter{interval: int64(interval), clock: &attemptClock{}}
	l.span = l.interval * int64(burst)
	life := time.Duration(l.span) + bucketSlack
	l.clock.ns.Store(now.UnixNano())
	l.buckets = otter.Must(&otter.Options[netip.Addr, *Bucket]{
		MaximumSize:      MaxClients,
		ExpiryCalculator: otter.ExpiryAccessing[netip.Addr, *Bucket](life),
		Clock:            l.clock,
	})
	return l
}

// Bucket is one address's bucket.
type Bucket struct {
	// tat is the theoretical arrival time, in Unix nanoseconds.
	tat atomic.Int64
	// gave is the accounts whose right logins gave their attempt back
	// lately; nil until one did. mu guards it.
	mu   sync.Mutex
	gave *[giveBackMemory]gaveBack
	// Seen is the caller's count of the address's attempts of the current
	// minute, zero in a new bucket: Take does not count there.
	Seen MinuteCount
}

// gaveBack is one account whose right login gave its attempt back, and
// when, in Unix nanoseconds.
type gaveBack struct {
	account uint64
	at      int64
}

// A right login gives its attempt back once per account and address in
// giveBackWindow, so that a fleet behind one address, each of its hosts
// an account of its own, is not slowed by its own logins, while one
// client sending one account's right logins again and again spends its
// budget as any other attempt does. The last giveBackMemory accounts are
// remembered: a client cycling through more accounts than that, all of
// them with their right passwords, still gets their attempts back, each
// account's logins bounded by its share of nmauth's gates. A proof that
// names no account gets its attempt back every time.
const (
	giveBackWindow = time.Minute
	giveBackMemory = 8
)

// Take counts an attempt of addr at now. It returns addr's bucket and how
// long the client must wait before the attempt would be allowed, zero
// when it is allowed and counted.
func (l *Limiter) Take(addr netip.Addr, now time.Time) (*Bucket, time.Duration) {
	ns := now.UnixNano()
	l.clock.advance(ns)
	b, ok := l.buckets.GetIfPresent(addr)
	if !ok {
		b, _ = l.buckets.SetIfAbsent(addr, new(Bucket))
	}
	for {
		tat := b.tat.Load()
		next := max(tat, ns) + l.interval
		if wait := next - ns - l.span; wait > 0 {
			return b, time.Duration(wait)
		}
		if b.tat.CompareAndSwap(tat, next) {
			return b, 0
		}
	}
}

// Wait returns how long addr must wait at now before its next attempt
// would be allowed, without counting one.
func (l *Limiter) Wait(addr netip.Addr, now time.Time) time.Duration {
	b, ok := l.buckets.GetIfPresent(addr)
	if !ok {
		return 0
	}
	ns := now.UnixNano()
	return time.Duration(max(max(b.tat.Load(), ns)+l.interval-ns-l.span, 0))
}

// Interval is the time one attempt costs: a bucket's tat runs at most a
// burst ahead, so an address is no longer refused an interval after an
// allowed attempt, and an interval after the wait of a refused one.
func (l *Limiter) Interval() time.Duration { return time.Duration(l.interval) }

// GiveBack returns the attempt that Take allowed in b at an earlier time,
// after it proved a right credential of account (a hash of it; 0 when
// the proof names none), unless that account had one given back from this
// address within giveBackWindow. It never fills the bucket beyond full, so
// a client gains nothing by it but the attempt it spent.
func (l *Limiter) GiveBack(b *Bucket, now time.Time, account uint64) {
	ns := now.UnixNano()
	if account != 0 && !b.firstGiveBack(account, ns) {
		return
	}
	for {
		tat := b.tat.Load()
		if tat <= ns || b.tat.CompareAndSwap(tat, max(tat-l.interval, ns)) {
			return
		}
	}
}

// firstGiveBack reports whether account had no attempt given back from
// b's address within giveBackWindow of ns, and notes it as given now.
func (b *Bucket) firstGiveBack(account uint64, ns int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gave == nil {
		b.gave = new([giveBackMemory]gaveBack)
	}
	oldest := 0
	for i, g := range b.gave {
		if g.account == account && ns-g.at < int64(giveBackWindow) {
			return false
		}
		if g.at < b.gave[oldest].at {
			oldest = i
		}
	}
	b.gave[oldest] = gaveBack{account: account, at: ns}
	return true
}

// Len is the number of addresses the limiter holds a bucket for, an
// estimate while buckets are added or expire.
func (l *Limiter) Len() int { return l.buckets.EstimatedSize() }

// attemptClock is the clock of the buckets' cache: the time of the latest
// attempt, by the caller's clock, moved on in steps of at least clockStep.
// So buckets expire by the clock that fills them, the cache never reads a
// clock of its own from a goroutine of its own, and attempts seldom write
// this shared word.
type attemptClock struct{ ns atomic.Int64 }

const clockStep = 10 * time.Millisecond

// advance moves the clock on to ns if that is at least clockStep ahead.
func (c *attemptClock) advance(ns int64) {
	for {
		old := c.ns.Load()
		if ns-old < int64(clockStep) || c.ns.CompareAndSwap(old, ns) {
			return
		}
	}
}

func (c *attemptClock) NowNano() int64 { return c.ns.Load() }

// Tick paces the cache's periodic removal of expired buckets.
func (c *attemptClock) Tick(d time.Duration) <-chan time.Time { return time.Tick(d) }

// MinuteCount counts events in the current minute in one atomic word:
// the minute's number (modulo 2^minuteBits) in the high bits, the count
// in the low ones. The first event of a new minute starts it at one.
type MinuteCount struct{ v atomic.Uint64 }

const (
	minuteBits = 24
	countBits  = 64 - minuteBits
	countMask  = 1<<countBits - 1
)

// Add counts one event of minute and returns the minute's count.
func (c *MinuteCount) Add(minute uint64) uint64 {
	tag := minute << countBits
	for {
		old := c.v.Load()
		next := tag | 1
		if old&^countMask == tag && old&countMask < countMask {
			next = old + 1
		}
		if c.v.CompareAndSwap(old, next) {
			return next & countMask
		}
	}
}
