package nmauth

import (
	"context"
	"hash/maphash"
	"math"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"
)

// clientLimiter bounds how fast one client address may try credentials,
// against an attacker spraying one password across many accounts, which
// the per-account backoff does not see. It also watches for the signs of
// a reverse proxy missing from [Config.TrustedProxies] (see proxyWatch).
//
// Each address has a bucket of the generic cell rate algorithm (GCRA):
// one atomic word, the bucket's theoretical arrival time (tat). Each
// attempt moves tat on by one interval, 1/[Config.ClientRate], from now
// or from where it was if that is later; an attempt that would put tat
// more than [Config.ClientBurst] intervals ahead of now is refused, and
// waits until it would not. So a bucket whose tat has passed is full, the
// same as a new one. Attempts of one address wait for each other only for
// a compare-and-swap.
//
// The buckets live in an otter cache: a lookup takes no lock that other
// lookups wait for, and adding or dropping an address costs the same at
// any size. Each bucket expires bucketSlack after the latest attempt plus
// the time to refill a whole burst: by then it is full whatever happened,
// so expiring it loses nothing and no sweep is needed. Past
// maxLimitedClients addresses inside that time the cache drops the ones
// least likely to come back (W-TinyLFU), one at a time: a busy address,
// an attacker's included, keeps its bucket while addresses seen once
// come and go.
type clientLimiter struct {
	// interval is the time one attempt costs, in nanoseconds; span is
	// how far ahead of now tat may run, ClientBurst intervals.
	interval, span int64
	trusted        []netip.Prefix
	// buckets is nil when the limit is off.
	buckets *otter.Cache[netip.Addr, *clientBucket]
	clock   *attemptClock
	watch   proxyWatch
	// wrongBearersUntil is when no client can be past its limit any more
	// by wrong bearer credentials; 0 once that time has passed (see
	// limitBearer).
	wrongBearersUntil atomic.Int64
}

// maxLimitedClients bounds the limiter's memory. With the defaults a
// bucket lives 21 s after its address's last attempt, so it holds every
// address while fewer than about 4,700 new ones a second arrive: a
// million hosts logging in every 15 minutes bring 1,111.
const maxLimitedClients = 100000

// bucketSlack is what a bucket lives past the time it takes to refill.
// otter leaves an entry's expiry as it was when a read would move it by a
// second or less, and its clock lags by up to clockStep, so without it a
// bucket could expire that much early.
const bucketSlack = time.Second + clockStep

func newClientLimiter(cfg Config) *clientLimiter {
	l := &clientLimiter{
		trusted: cfg.TrustedProxies,
		watch:   proxyWatch{log: cfg.Logger},
	}
	if cfg.ClientRate < 0 {
		return l
	}
	burst := max(cfg.ClientBurst, 1)
	// The bound keeps span within int64 whatever rate is configured.
	interval := min(float64(time.Second)/cfg.ClientRate, float64(math.MaxInt64/4)/float64(burst))
	l.interval = int64(interval)
	l.span = l.interval * int64(burst)
	life := time.Duration(l.span) + bucketSlack
	l.clock = &attemptClock{}
	l.clock.ns.Store(cfg.Now().UnixNano())
	l.buckets = otter.Must(&otter.Options[netip.Addr, *clientBucket]{
		MaximumSize:      maxLimitedClients,
		ExpiryCalculator: otter.ExpiryAccessing[netip.Addr, *clientBucket](life),
		Clock:            l.clock,
	})
	return l
}

// clientBucket is one address's bucket.
type clientBucket struct {
	// tat is the theoretical arrival time, in Unix nanoseconds.
	tat atomic.Int64
	// seen counts the address's attempts of the current minute, for
	// proxyWatch.
	seen minuteCount
	// gave is the accounts whose right logins gave their attempt back
	// lately; nil until one did. mu guards it.
	mu   sync.Mutex
	gave *[giveBackMemory]gaveBack
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
// account's logins bounded by its share of the gates (see admission).
// A host's machine secret, which costs no hash, gets its attempt back
// every time (see [Authenticator.LoginHost]).
const (
	giveBackWindow = time.Minute
	giveBackMemory = 8
)

// take counts an attempt of the client addr at now. It returns how long
// the client must wait before the attempt would be allowed, zero when it
// is allowed, and then the bucket it was counted in, for giveBack; nil
// when the limit is off.
func (l *clientLimiter) take(addr netip.Addr, now time.Time) (*clientBucket, time.Duration) {
	if l.buckets == nil {
		return nil, 0
	}
	ns := now.UnixNano()
	l.clock.advance(ns)
	b, ok := l.buckets.GetIfPresent(addr)
	if !ok {
		b, _ = l.buckets.SetIfAbsent(addr, new(clientBucket))
	}
	l.watch.attempt(b, addr, ns)
	for {
		tat := b.tat.Load()
		next := max(tat, ns) + l.interval
		if wait := next - ns - l.span; wait > 0 {
			return nil, time.Duration(wait)
		}
		if b.tat.CompareAndSwap(tat, next) {
			return b, 0
		}
	}
}

// giveBack returns the attempt that take counted in b at an earlier time,
// after it proved a right credential of account (a hash of its
// accountKey; 0 when the proof names none), unless that account had one
// given back from this address within giveBackWindow. It never fills the
// bucket beyond full, so a client gains nothing by it but the attempt it
// spent.
func (l *clientLimiter) giveBack(b *clientBucket, now time.Time, account uint64) {
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
func (b *clientBucket) firstGiveBack(account uint64, ns int64) bool {
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

// provedAccountSeed keys the hashes of accounts for giveBack.
var provedAccountSeed = maphash.MakeSeed()

// markProvedAccount is [markProved] for a login of account: its
// attempt is given back only once per account and address in
// giveBackWindow (see giveBack).
func markProvedAccount(ctx context.Context, account accountKey) {
	if lc, ok := ctx.Value(provedKey{}).(*limitedCtx); ok {
		var h maphash.Hash
		h.SetSeed(provedAccountSeed)
		h.WriteString(string(account.kind))
		h.WriteByte(0)
		h.WriteString(account.name)
		lc.provedFor.Store(h.Sum64() | 1)
		lc.proved.Store(true)
	}
}

// clientOf names the client of r as [clientAddr] does, and notes, at
// now, a forwarding header from a peer that is not a trusted proxy.
func (l *clientLimiter) clientOf(r *http.Request, now time.Time) netip.Addr {
	peer := peerAddr(r)
	if !isTrusted(l.trusted, peer) {
		l.watch.forwarded(r, peer, now)
	}
	return forwardedClient(r, peer, l.trusted)
}

// stats is what the limit and its watch counted.
func (l *clientLimiter) stats() clientStats {
	s := l.watch.stats()
	if l.buckets != nil {
		s.Addresses = l.buckets.EstimatedSize()
	}
	return s
}

// attemptClock is the clock of the buckets' cache: the time of the latest
// attempt, by [Config.Now], moved on in steps of at least clockStep. So
// buckets expire by the clock that fills them, the cache never calls
// Config.Now itself from a goroutine of its own, and attempts seldom
// write this shared word.
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

// clientAddr is the connection's peer address, or, when the peer is a
// trusted proxy, the nearest untrusted address in X-Forwarded-For. IPv6
// clients are grouped by /64, the block a single host usually holds.
func clientAddr(r *http.Request, trusted []netip.Prefix) netip.Addr {
	return forwardedClient(r, peerAddr(r), trusted)
}

// peerAddr is the address of the connection's peer; the unspecified IPv6
// address when r has none, as a request served without a connection.
func peerAddr(r *http.Request) netip.Addr { return remotePeer(r.RemoteAddr) }

// remotePeer is peerAddr of a request whose RemoteAddr is remote.
func remotePeer(remote string) netip.Addr {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return netip.IPv6Unspecified()
	}
	return ap.Addr().Unmap()
}

// forwardedClient is the client of a request from peer: peer itself,
// unless it is a trusted proxy that named the client in X-Forwarded-For.
// Then the hops are read from the right, the one the proxy added first,
// and the first that is not trusted is the client; hops to its left were
// written by the client and are not believed. A hop may carry a port
// ("192.0.2.1:5678", "[2001:db8::1]:443"). A hop that is no address at
// all ("unknown", an obfuscated name) gives the invalid address: such
// clients share one bucket, apart from the proxy's own. IPv6 clients are
// grouped by /64.
func forwardedClient(r *http.Request, peer netip.Addr, trusted []netip.Prefix) netip.Addr {
	addr := peer
	if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 && isTrusted(trusted, peer) {
		hops := strings.Split(strings.Join(xff, ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			hop, ok := parseHop(hops[i])
			if !ok {
				return netip.Addr{}
			}
			addr = hop
			if !isTrusted(trusted, addr) {
				break
			}
		}
	}
	if addr.Is6() {
		addr = netip.PrefixFrom(addr, 64).Masked().Addr()
	}
	return addr
}

// parseHop reads one X-Forwarded-For entry: an address, with or without a
// port, IPv6 with or without brackets.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

func isTrusted(trusted []netip.Prefix, a netip.Addr) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
