package nmauth

import (
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/nmauth/nmauth/internal/httpx"
)

// clientStats is what the per-client limit counted; see the fields of
// [Stats] that bear its names.
type clientStats struct {
	Addresses          int
	ForwardedUntrusted uint64
	OneAddressMinutes  uint64
}

// proxyWatch notices the signs that the limiter stands behind a reverse
// proxy it was not told of (see [httpx.ProxyWatch]) and logs them to log.
type proxyWatch struct {
	log   *slog.Logger
	watch httpx.ProxyWatch
}

// forwarded notes r, at now, if it carries a forwarding header although
// it comes from peer, which is not a trusted proxy.
func (w *proxyWatch) forwarded(r *http.Request, peer netip.Addr, now time.Time) {
	w.watch.Forwarded(w.log, r.Header, peer, now)
}

// attempt counts an attempt of addr, whose bucket is b, at ns (Unix
// nanoseconds).
func (w *proxyWatch) attempt(b *clientBucket, addr netip.Addr, ns int64) {
	w.watch.Attempt(w.log, &b.Seen, addr, ns)
}

// stats is what the watch counted.
func (w *proxyWatch) stats() clientStats {
	untrusted, oneAddress := w.watch.Counts()
	return clientStats{ForwardedUntrusted: untrusted, OneAddressMinutes: oneAddress}
}
