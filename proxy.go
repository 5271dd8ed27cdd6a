package nmauth

import (
	"log/slog"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/nmauth/nmauth/internal/limit"
)

// clientStats is what the per-client limit counted; see the fields of
// [Stats] that bear its names.
type clientStats struct {
	Addresses          int
	ForwardedUntrusted uint64
	OneAddressMinutes  uint64
}

// oneAddressAttempts is how many attempts one address must make in a
// minute before the watch asks whether it made most of them: far more
// than a person or a host makes.
const oneAddressAttempts = 64

// proxyWatch notices the signs that the limiter stands behind a reverse
// proxy it was not told of. It costs an attempt two atomic updates.
type proxyWatch struct {
	log *slog.Logger
	// attempts counts the attempts of the current minute, of every
	// address.
	attempts limit.MinuteCount
	// untrusted and oneAddress count the signs; untrustedLogged and
	// oneAddressLogged are the minute of the last line about each, plus
	// one.
	untrusted, oneAddress             atomic.Uint64
	untrustedLogged, oneAddressLogged atomic.Uint64
}

// forwarded notes r, at now, if it carries a forwarding header although
// it comes from peer, which is not a trusted proxy.
func (w *proxyWatch) forwarded(r *http.Request, peer netip.Addr, now time.Time) {
	if len(r.Header["X-Forwarded-For"]) == 0 && len(r.Header["Forwarded"]) == 0 {
		return
	}
	n := w.untrusted.Add(1)
	if due(&w.untrustedLogged, now) {
		w.log.Warn("a request carries X-Forwarded-For or Forwarded from an address that is not a trusted proxy: "+
			"if a reverse proxy runs there, add it to the trusted proxies (Config.TrustedProxies; nmauthd serve --trusted-proxy), "+
			"else every client behind it shares the proxy's per-client limit; if none does, a client is forging "+
			"its address, and the header is ignored",
			slog.String("peer", peer.String()), slog.Uint64("count", n))
	}
}

// attempt counts an attempt of addr, whose bucket is b, at ns (Unix
// nanoseconds), and reports the minute's attempts if addr made most of
// them. It asks only when addr's count reaches a power of two, so that
// most attempts touch no shared word but the minute's total.
func (w *proxyWatch) attempt(b *clientBucket, addr netip.Addr, ns int64) {
	minute := uint64(ns / int64(time.Minute))
	n := b.Seen.Add(minute)
	total := w.attempts.Add(minute)
	if n < oneAddressAttempts || n&(n-1) != 0 || 2*n <= total {
		return
	}
	if !due(&w.oneAddressLogged, time.Unix(0, ns)) {
		return
	}
	w.oneAddress.Add(1)
	client := addr.String()
	if !addr.IsValid() {
		client = "none (a trusted proxy named no address in X-Forwarded-For)"
	}
	w.log.Warn("most login attempts of this minute come from one address: "+
		"if it is a reverse proxy, add it to the trusted proxies (Config.TrustedProxies; nmauthd serve --trusted-proxy) "+
		"and have it send X-Forwarded-For, else every client behind it shares its per-client limit; "+
		"if it is no proxy, one client is hammering the login routes",
		slog.String("client", client), slog.Uint64("attempts", n), slog.Uint64("of", total))
}

// due reports whether a line may be logged at now, at most one a minute:
// the first caller of a minute wins.
func due(logged *atomic.Uint64, now time.Time) bool {
	minute := uint64(now.UnixNano()/int64(time.Minute)) + 1
	last := logged.Load()
	return last != minute && logged.CompareAndSwap(last, minute)
}

// stats is what the watch counted.
func (w *proxyWatch) stats() clientStats {
	return clientStats{
		ForwardedUntrusted: w.untrusted.Load(),
		OneAddressMinutes:  w.oneAddress.Load(),
	}
}
