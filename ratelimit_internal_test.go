package nmauth

import (
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testLimiter is a limiter of 1 attempt a second after a burst of 20,
// the defaults, on clock.
func testLimiter(clock *fakeClock) *clientLimiter {
	cfg := Config{Now: clock.Now, ClientRate: 1, ClientBurst: 20, Logger: slog.New(slog.DiscardHandler)}
	cfg.setDefaults()
	return newClientLimiter(cfg)
}

// nthAddr is the n-th of a run of distinct IPv4 addresses.
func nthAddr(n int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, byte(n >> 16), byte(n >> 8), byte(n)})
}

// spend takes attempts of addr until one is refused and returns how many
// were allowed.
func spend(l *clientLimiter, addr netip.Addr, now time.Time) int {
	n := 0
	for {
		if _, wait := l.take(addr, now); wait > 0 {
			return n
		}
		n++
	}
}

// TestClientLimiterKeepsBusyAddresses checks that a flood of new
// addresses, more than the limiter holds, does not reset the bucket of an
// address that spent its burst: no mass forgetting, and a busy bucket is
// not the one dropped for room.
func TestClientLimiterKeepsBusyAddresses(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	l := testLimiter(clock)
	attacker := netip.MustParseAddr("198.51.100.7")
	if n := spend(l, attacker, clock.Now()); n != 20 {
		t.Fatalf("burst of %d, want 20", n)
	}
	for i := range maxLimitedClients + maxLimitedClients/2 {
		l.take(nthAddr(i), clock.Now())
		if i%1000 == 0 {
			clock.Advance(time.Millisecond)
			// The attacker keeps trying, as one does.
			if _, wait := l.take(attacker, clock.Now()); wait == 0 {
				t.Fatalf("after %d new addresses the attacker's bucket was forgotten", i)
			}
		}
	}
	l.buckets.CleanUp()
	if n := l.buckets.EstimatedSize(); n > maxLimitedClients {
		t.Errorf("%d buckets held, bound %d", n, maxLimitedClients)
	}
}

// TestClientBucketExpiresWhenFull checks that a bucket is dropped only
// once it has refilled, and then within about a second.
func TestClientBucketExpiresWhenFull(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	l := testLimiter(clock)
	addr := netip.MustParseAddr("192.0.2.1")
	spend(l, addr, clock.Now())
	// The burst refills in 20 s; until then the bucket is kept.
	// Another address's attempt moves the cache's clock on.
	other := netip.MustParseAddr("192.0.2.2")
	clock.Advance(20*time.Second - time.Millisecond)
	l.take(other, clock.Now())
	b, ok := l.buckets.GetEntryQuietly(addr)
	if !ok {
		t.Fatal("the bucket was dropped before it refilled")
	}
	if tat := time.Unix(0, b.Value.tat.Load()); !tat.After(clock.Now()) {
		t.Fatalf("the bucket is full at %v already", tat)
	}
	clock.Advance(bucketSlack + 2*time.Millisecond)
	l.take(other, clock.Now())
	if _, ok := l.buckets.GetEntryQuietly(addr); ok {
		t.Fatal("a full bucket is kept past bucketSlack after it refilled")
	}
	if n := spend(l, addr, clock.Now()); n != 20 {
		t.Errorf("a forgotten address has a burst of %d, want 20", n)
	}
}

// TestClientLimiterConcurrent checks that attempts of one address at one
// instant from many goroutines get exactly the burst between them, and
// that giving back never grows it.
func TestClientLimiterConcurrent(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	l := testLimiter(clock)
	addr := netip.MustParseAddr("192.0.2.1")
	now := clock.Now()
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if b, wait := l.take(addr, now); wait == 0 {
					allowed.Add(1)
					l.giveBack(b, now, 0)
					l.giveBack(b, now, 0) // more than was taken: a no-op past full
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
	clock2 := &fakeClock{now: now}
	l = testLimiter(clock2)
	allowed.Store(0)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if _, wait := l.take(addr, now); wait == 0 {
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

// FuzzForwardedClient checks the reading of X-Forwarded-For: a peer that
// is not a trusted proxy is the client whatever the header says, and
// behind a trusted one the client is no address at all or one of the
// header's hops.
func FuzzForwardedClient(f *testing.F) {
	for _, s := range []string{"203.0.113.1", "198.51.100.7, 203.0.113.1", "10.0.0.2, 10.0.0.3", "[2001:db8::1]:443",
		"unknown", "", " , ,", "192.0.2.1:5678,10.0.0.9", "::ffff:10.0.0.1", "fe80::1%eth0"} {
		f.Add(s)
	}
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	f.Fuzz(func(t *testing.T, xff string) {
		r := &http.Request{Header: http.Header{"X-Forwarded-For": {xff}}}
		untrusted := netip.MustParseAddr("192.0.2.1")
		if got := forwardedClient(r, untrusted, trusted); got != untrusted {
			t.Fatalf("an untrusted peer became %v", got)
		}
		got := forwardedClient(r, netip.MustParseAddr("10.0.0.1"), trusted)
		if !got.IsValid() {
			return
		}
		for _, hop := range strings.Split(xff, ",") {
			a, ok := parseHop(hop)
			if a.Is6() {
				a = netip.PrefixFrom(a, 64).Masked().Addr()
			}
			if ok && a == got {
				return
			}
		}
		t.Fatalf("X-Forwarded-For %q gave %v, none of its hops", xff, got)
	})
}
