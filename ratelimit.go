package nmauth

import (
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// clientLimiter bounds how fast one client address may try credentials,
// against an attacker spraying one password across many accounts, which
// the per-account backoff does not see.
type clientLimiter struct {
	limit   rate.Limit
	burst   int
	trusted []netip.Prefix

	mu      sync.Mutex
	clients map[netip.Addr]*rate.Limiter
}

// maxLimitedClients bounds the limiter's memory; past it, clients whose
// bucket has refilled are forgotten first.
const maxLimitedClients = 100000

func newClientLimiter(perSecond float64, burst int, trusted []netip.Prefix) *clientLimiter {
	if perSecond < 0 {
		return nil
	}
	return &clientLimiter{
		limit:   rate.Limit(perSecond),
		burst:   burst,
		trusted: trusted,
		clients: make(map[netip.Addr]*rate.Limiter),
	}
}

// wait returns how long the client must wait before this attempt would be
// allowed; zero means go ahead, and the attempt is counted.
func (l *clientLimiter) wait(r *http.Request, now time.Time) time.Duration {
	if l == nil {
		return 0
	}
	addr := clientAddr(r, l.trusted)
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.clients[addr]
	if !ok {
		if len(l.clients) >= maxLimitedClients {
			l.evict(now)
		}
		lim = rate.NewLimiter(l.limit, l.burst)
		l.clients[addr] = lim
	}
	res := lim.ReserveN(now, 1)
	if !res.OK() {
		return time.Minute
	}
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d
	}
	return 0
}

func (l *clientLimiter) evict(now time.Time) {
	for a, lim := range l.clients {
		if lim.TokensAt(now) >= float64(l.burst) {
			delete(l.clients, a)
		}
	}
	if len(l.clients) >= maxLimitedClients {
		clear(l.clients)
	}
}

// clientAddr is the connection's peer address, or, when the peer is a
// trusted proxy, the nearest untrusted address in X-Forwarded-For. A hop
// may carry a port ("192.0.2.1:5678", "[2001:db8::1]:443"). A hop that is
// no address at all ("unknown", an obfuscated name) gives the invalid
// address: such clients share one bucket, apart from the proxy's own.
// IPv6 clients are grouped by /64, the block a single host usually holds.
func clientAddr(r *http.Request, trusted []netip.Prefix) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	addr := ap.Addr().Unmap()
	if err != nil {
		addr = netip.IPv6Unspecified()
	}
	if isTrusted(trusted, addr) {
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
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
