package limit

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// start is when the clocks of these tests begin.
var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// testLimiter is a limiter of 1 attempt a second after a burst of 20,
// nmauth's defaults, whose clock starts at now.
func testLimiter(now time.Time) *Limiter {
	return New(1, 20, now)
}

// nthAddr is the n-th of a run of distinct IPv4 addresses.
func nthAddr(n int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, byte(n >> 16), byte(n >> 8), byte(n)})
}

// spend takes attempts of addr until one is refused and returns how many
// were allowed.
func spend(l *Limiter, addr netip.Addr, now time.Time) int {
	n := 0
	for {
		if _, wait := l.Take(addr, now); wait > 0 {
			return n
		}
		n++
	}
}

// TestLimiterKeepsBusyAddresses checks that a flood of new addresses,
// more than the limiter holds, does not reset the bucket of an address
// that spent its burst: no mass forgetting, and a busy bucket is not the
// one dropped for room.
func TestLimiterKeepsBusyAddresses(t *testing.T) {
	now := start
	l := testLimiter(now)
	attacker := netip.MustParseAddr("198.51.100.7")
	if n := spend(l, attacker, now); n != 20 {
		t.Fatalf("burst of %d, want 20", n)
	}
	for i := range MaxClients + MaxClients/2 {
		l.Take(nthAddr(i), now)
		if i%1000 == 0 {
			now = now.Add(time.Millisecond)
			// The attacker keeps trying, as one does.
			if _, wait := l.Take(attacker, now); wait == 0 {
				t.Fatalf("after %d new addresses the attacker's bucket was forgotten", i)
			}
		}
	}
	l.buckets.CleanUp()
	if n := l.Len(); n > MaxClients {
		t.Errorf("%d buckets held, bound %d", n, MaxClients)
	}
}

// TestBucketExpiresWhenFull checks that a bucket is dropped only once it
// has refilled, and then within about a second.
func TestBucketExpiresWhenFull(t *testing.T) {
	now := start
	l := testLimiter(now)
	addr := netip.MustParseAddr("192.0.2.1")
	spend(l, addr, now)
	// The burst refills in 20 s; until then the bucket is kept.
	// Another address's attempt moves the cache's clock on.
	other := netip.MustParseAddr("192.0.2.2")
	now = now.Add(20*time.Second - time.Millisecond)
	l.Take(other, now)
	b, ok := l.buckets.GetEntryQuietly(addr)
	if !ok {
		t.Fatal("the bucket was dropped before it refilled")
	}
	if tat := time.Unix(0, b.Value.tat.Load()); !tat.After(now) {
		t.Fatalf("the bucket is full at %v already", tat)
	}
	now = now.Add(bucketSlack + 2*time.Millisecond)
	l.Take(other, now)
	if _, ok := l.buckets.GetEntryQuietly(addr); ok {
		t.Fatal("a full bucket is kept past bucketSlack after it refilled")
	}
	if n := spend(l, addr, now); n != 20 {
		t.Errorf("a forgotten address has a burst of %d, want 20", n)
	}
}

// TestLimiterConcurrent checks that attempts of one address at one
// instant from many goroutines get exactly the burst between them, and
// that giving back never grows it.
func TestLimiterConcurrent(t *testing.T) {
	now := start
	l := testLimiter(now)
	addr := netip.MustParseAddr("192.0.2.1")
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if b, wait := l.Take(addr, now); wait == 0 {
					allowed.Add(1)
					l.GiveBack(b, now, 0)
					l.GiveBack(b, now, 0) // more than was taken: a no-op past full
				}
			}
		}()
	}
	wg.Wait()
	if n := spend(l, addr, now); n != 20 {
		t.Errorf("after the attempts were given back the burst is %d, want 20", n)
	}
	if allowed.Load() != 80 {
		t.Errorf("%d of 80 attempts allowed, each given back at once", allowed.Load())
	}
	l = testLimiter(now)
	allowed.Store(0)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if _, wait := l.Take(addr, now); wait == 0 {
					allowed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if allowed.Load() != 20 {
		t.Errorf("%d of 80 concurrent attempts allowed, want the burst of 20", allowed.Load())
	}
}

// TestGiveBackOncePerAccount checks that an account's right logins get
// their attempt back once a minute from one address, that the last eight
// accounts are remembered and a ninth pushes out the oldest, and that a
// proof naming no account gets it back every time.
func TestGiveBackOncePerAccount(t *testing.T) {
	now := start
	l := testLimiter(now)
	addr := netip.MustParseAddr("192.0.2.1")
	// attempt takes an attempt a millisecond after the one before and
	// gives it back for account, and reports whether it was given back.
	attempt := func(account uint64) bool {
		t.Helper()
		now = now.Add(time.Millisecond)
		b, wait := l.Take(addr, now)
		if wait > 0 {
			t.Fatal("refused")
		}
		tat := b.tat.Load()
		l.GiveBack(b, now, account)
		return b.tat.Load() < tat
	}
	if !attempt(1) {
		t.Fatal("the first right login of an account got nothing back")
	}
	if attempt(1) {
		t.Error("a second right login of the account within the minute got its attempt back")
	}
	for range 3 {
		if !attempt(0) {
			t.Error("a proof that names no account got nothing back")
		}
	}
	for a := uint64(2); a <= 9; a++ {
		if !attempt(a) {
			t.Errorf("account %d got nothing back", a)
		}
	}
	// Accounts 2 to 9 hold the eight places: account 1, the oldest, was
	// pushed out.
	if !attempt(1) {
		t.Error("an account pushed out of the memory got nothing back")
	}
	if attempt(9) {
		t.Error("a remembered account got its attempt back twice")
	}
	now = now.Add(giveBackWindow)
	if !attempt(9) {
		t.Error("a minute later the account got nothing back")
	}
}

// TestWait checks that Wait says what Take would, without counting an
// attempt, and nothing for an address without a bucket.
func TestWait(t *testing.T) {
	now := start
	l := testLimiter(now)
	addr := netip.MustParseAddr("192.0.2.1")
	if w := l.Wait(addr, now); w != 0 {
		t.Fatalf("an unknown address waits %v", w)
	}
	spend(l, addr, now)
	_, want := l.Take(addr, now)
	for range 3 {
		if w := l.Wait(addr, now); w != want || w != l.Interval() {
			t.Fatalf("Wait %v, Take's %v, interval %v", w, want, l.Interval())
		}
	}
	if w := l.Wait(addr, now.Add(l.Interval())); w != 0 {
		t.Errorf("an interval later the address still waits %v", w)
	}
}

// TestMinuteCount checks that a count starts again at one with each new
// minute, and counts on within one.
func TestMinuteCount(t *testing.T) {
	var c MinuteCount
	for i := uint64(1); i <= 3; i++ {
		if n := c.Add(7); n != i {
			t.Fatalf("event %d of a minute counted %d", i, n)
		}
	}
	if n := c.Add(8); n != 1 {
		t.Errorf("the first event of the next minute counted %d", n)
	}
	// The minute's number is kept modulo 2^minuteBits: 2^24 minutes
	// (32 years) later is taken for the same minute.
	if n := c.Add(8 + 1<<minuteBits); n != 2 {
		t.Errorf("a minute 2^%d later counted %d, want 2", minuteBits, n)
	}
}
