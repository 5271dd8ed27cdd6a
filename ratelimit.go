package nmauth

import (
	"net/http"
	"net/netip"
	"time"

	"github.com/nmauth/nmauth/internal/clientaddr"
	"github.com/nmauth/nmauth/internal/limit"
)

// clientLimiter bounds how fast one client address may try credentials,
// against an attacker spraying one password across many accounts, which
// the per-account backoff does not see: a bucket per address, 1/
// [Config.ClientRate] an attempt after a burst of [Config.ClientBurst]
// (see internal/limit). It names the client of a request, and watches for
// the signs of a reverse proxy missing from [Config.TrustedProxies] (see
// proxyWatch), whose count of an address's attempts each bucket carries.
type clientLimiter struct {
	trusted []netip.Prefix
	// buckets is nil when the limit is off.
	buckets *limit.Limiter
	watch   proxyWatch
}

// clientBucket is one address's bucket; its Seen counts the address's
// attempts of the current minute, for proxyWatch.
type clientBucket = limit.Bucket

func newClientLimiter(cfg Config) *clientLimiter {
	l := &clientLimiter{
		trusted: cfg.TrustedProxies,
		watch:   proxyWatch{log: cfg.Logger},
	}
	if cfg.ClientRate >= 0 {
		l.buckets = limit.New(cfg.ClientRate, cfg.ClientBurst, cfg.Now())
	}
	return l
}

// take counts an attempt of the client addr at now. It returns how long
// the client must wait before the attempt would be allowed, zero when it
// is allowed, and then the bucket it was counted in, for
// [limit.Limiter.GiveBack]; nil when the limit is off.
func (l *clientLimiter) take(addr netip.Addr, now time.Time) (*clientBucket, time.Duration) {
	if l.buckets == nil {
		return nil, 0
	}
	b, wait := l.buckets.Take(addr, now)
	l.watch.attempt(b, addr, now.UnixNano())
	if wait > 0 {
		return nil, wait
	}
	return b, 0
}

// clientOf names the client of r as [clientAddr] does, and notes, at
// now, a forwarding header from a peer that is not a trusted proxy.
func (l *clientLimiter) clientOf(r *http.Request, now time.Time) netip.Addr {
	peer := clientaddr.Peer(r.RemoteAddr)
	if !clientaddr.Trusted(l.trusted, peer) {
		l.watch.forwarded(r, peer, now)
	}
	return clientaddr.Forwarded(r, peer, l.trusted)
}

// wrongBearer counts a wrong bearer credential of client at now as an
// attempt and returns how long the client must wait, zero when the
// attempt was allowed (see [limit.Limiter.NoteWrong]).
func (l *clientLimiter) wrongBearer(client netip.Addr, now time.Time) time.Duration {
	_, wait := l.take(client, now)
	if l.buckets != nil {
		l.buckets.NoteWrong(now, wait)
	}
	return wait
}

// wrongBearersSeen reports whether a client may be past its limit by
// wrong bearer credentials (see [limit.Limiter.WrongSeen]).
func (l *clientLimiter) wrongBearersSeen() bool { return l.buckets.WrongSeen() }

// stats is what the limit and its watch counted.
func (l *clientLimiter) stats() clientStats {
	s := l.watch.stats()
	if l.buckets != nil {
		s.Addresses = l.buckets.Len()
	}
	return s
}

// clientAddr is the connection's peer address, or, when the peer is a
// trusted proxy, the nearest untrusted address in X-Forwarded-For. IPv6
// clients are grouped by /64, the block a single host usually holds.
func clientAddr(r *http.Request, trusted []netip.Prefix) netip.Addr {
	return clientaddr.Forwarded(r, clientaddr.Peer(r.RemoteAddr), trusted)
}

// remotePeer is the address of the connection's peer of a request whose
// RemoteAddr is remote; the unspecified IPv6 address when there is none,
// as for a request served without a connection.
func remotePeer(remote string) netip.Addr { return clientaddr.Peer(remote) }
