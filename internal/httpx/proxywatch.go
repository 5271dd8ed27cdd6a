// Package httpx holds the per-client limit of nmauth's login routes: it
// names a request's client, counts its attempts, and watches for the
// signs that the routes stand behind a reverse proxy nobody named as
// trusted: a forwarding header from an untrusted peer, and one address
// making most of a minute's attempts. It counts each sign and logs it at
// most once a minute. It knows nothing of the Authenticator.
package httpx

import (
	"log/slog"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/nmauth/nmauth/internal/limit"
)

// OneAddressAttempts is how many attempts one address must make in a
// minute before the watch asks whether it made most of them: far more
// than a person or a host makes.
const OneAddressAttempts = 64

// ProxyWatch counts the signs of a reverse proxy missing from the trusted
// proxies. It costs an attempt two atomic updates. Its zero value is ready
// to use.
type ProxyWatch struct {
	// attempts counts the attempts of the current minute, of every
	// address.
	attempts limit.MinuteCount
	// untrusted and oneAddress count the signs; untrustedLogged and
	// oneAddressLogged are the minute of the last line about each, plus
	// one.
	untrusted, oneAddress             atomic.Uint64
	untrustedLogged, oneAddressLogged atomic.Uint64
}

// Forwarded notes a request with header h, at now, if it carries a
// forwarding header although it comes from peer, which is not a trusted
// proxy.
func (w *ProxyWatch) Forwarded(log *slog.Logger, h http.Header, peer netip.Addr, now time.Time) {
	if len(h["X-Forwarded-For"]) == 0 && len(h["Forwarded"]) == 0 {
		return
	}
	n := w.untrusted.Add(1)
	if due(&w.untrustedLogged, now) {
		log.Warn("a request carries X-Forwarded-For or Forwarded from an address that is not a trusted proxy: "+
			"if a reverse proxy runs there, add it to the trusted proxies (Config.TrustedProxies; nmauthd serve --trusted-proxy), "+
			"else every client behind it shares the proxy's per-client limit; if none does, a client is forging "+
			"its address, and the header is ignored",
			slog.String("peer", peer.String()), slog.Uint64("count", n))
	}
}

// Attempt counts an attempt of addr, whose count of the minute's attempts
// is seen, at ns (Unix nanoseconds), and reports the minute's attempts if
// addr made most of them. It asks only when addr's count reaches a power
// of two, so that most attempts touch no shared word but the minute's
// total.
func (w *ProxyWatch) Attempt(log *slog.Logger, seen *limit.MinuteCount, addr netip.Addr, ns int64) {
	minute := uint64(ns / int64(time.Minute))
	n := seen.Add(minute)
	total := w.attempts.Add(minute)
	if n < OneAddressAttempts || n&(n-1) != 0 || 2*n <= total {
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
	log.Warn("most login attempts of this minute come from one address: "+
		"if it is a reverse proxy, add it to the trusted proxies (Config.TrustedProxies; nmauthd serve --trusted-proxy) "+
		"and have it send X-Forwarded-For, else every client behind it shares its per-client limit; "+
		"if it is no proxy, one client is hammering the login routes",
		slog.String("client", client), slog.Uint64("attempts", n), slog.Uint64("of", total))
}

// Counts returns how many requests carried a forwarding header from an
// untrusted peer, and in how many minutes one address made most of the
// attempts.
func (w *ProxyWatch) Counts() (forwardedUntrusted, oneAddressMinutes uint64) {
	return w.untrusted.Load(), w.oneAddress.Load()
}

// due reports whether a line may be logged at now, at most one a minute:
// the first caller of a minute wins.
func due(logged *atomic.Uint64, now time.Time) bool {
	minute := uint64(now.UnixNano()/int64(time.Minute)) + 1
	last := logged.Load()
	return last != minute && logged.CompareAndSwap(last, minute)
}
