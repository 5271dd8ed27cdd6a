package httpx

import (
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/nmauth/nmauth/internal/clientaddr"
	"github.com/nmauth/nmauth/internal/limit"
)

// Clients is the per-client limit of the login routes: it names the
// client of a request (the peer, or the nearest untrusted address a
// trusted proxy forwarded), counts its attempts in a bucket of the
// limiter, and watches for a reverse proxy missing from the trusted
// proxies, whose count of an address's attempts each bucket carries.
type Clients struct {
	trusted []netip.Prefix
	log     *slog.Logger
	// Buckets is nil when the limit is off.
	Buckets *limit.Limiter
	watch   ProxyWatch
}

// NewClients returns the limit of rate attempts a second after a burst of
// burst from one address (see [limit.New]), behind the trusted proxies,
// logging the watch's signs to log; a negative rate turns the limit off.
func NewClients(trusted []netip.Prefix, log *slog.Logger, rate float64, burst int, now time.Time) *Clients {
	c := &Clients{trusted: trusted, log: log}
	if rate >= 0 {
		c.Buckets = limit.New(rate, burst, now)
	}
	return c
}

// Take counts an attempt of the client addr at now. It returns how long
// the client must wait before the attempt would be allowed, zero when it
// is allowed, and then the bucket it was counted in, for
// [limit.Limiter.GiveBack]; nil when the limit is off.
func (c *Clients) Take(addr netip.Addr, now time.Time) (*limit.Bucket, time.Duration) {
	if c.Buckets == nil {
		return nil, 0
	}
	b, wait := c.Buckets.Take(addr, now)
	c.watch.Attempt(c.log, &b.Seen, addr, now.UnixNano())
	if wait > 0 {
		return nil, wait
	}
	return b, 0
}

// ClientOf names the client of r, and notes, at now, a forwarding header
// from a peer that is not a trusted proxy.
func (c *Clients) ClientOf(r *http.Request, now time.Time) netip.Addr {
	peer := clientaddr.Peer(r.RemoteAddr)
	if !clientaddr.Trusted(c.trusted, peer) {
		c.watch.Forwarded(c.log, r.Header, peer, now)
	}
	return clientaddr.Forwarded(r, peer, c.trusted)
}

// WrongBearer counts a wrong bearer credential of client at now as an
// attempt and returns how long the client must wait, zero when the
// attempt was allowed (see [limit.Limiter.NoteWrong]).
func (c *Clients) WrongBearer(client netip.Addr, now time.Time) time.Duration {
	_, wait := c.Take(client, now)
	if c.Buckets != nil {
		c.Buckets.NoteWrong(now, wait)
	}
	return wait
}

// Stats returns how many addresses the limit holds a bucket for (an
// estimate), how many requests carried a forwarding header from an
// untrusted peer, and in how many minutes one address made most of the
// attempts.
func (c *Clients) Stats() (addresses int, forwardedUntrusted, oneAddressMinutes uint64) {
	if c.Buckets != nil {
		addresses = c.Buckets.Len()
	}
	forwardedUntrusted, oneAddressMinutes = c.watch.Counts()
	return addresses, forwardedUntrusted, oneAddressMinutes
}
