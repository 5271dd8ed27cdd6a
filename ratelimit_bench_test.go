//go:build unix

package nmauth

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nmauth/nmauth/internal/httpx"
)

// BenchmarkClientLimit measures one attempt through the per-client
// limiter as Limit makes it (the client named from the request, the time
// read once), with the default limit, each call from the next address of
// a run in turn. At 1,000 addresses every bucket is found and, past its
// burst, refuses; at 1,000,000 the calls come faster than buckets expire,
// so each meets an address the limiter holds no bucket for and, past
// limit.MaxClients, makes room by dropping one. The parallel runs call
// from every P, each from its own point of the run. cpu-ns/op is the
// process's CPU time per attempt, both cores' in the parallel runs.
func BenchmarkClientLimit(b *testing.B) {
	for _, n := range []int{1000, 1000000} {
		peers := make([]string, n)
		for i := range peers {
			peers[i] = netip.AddrPortFrom(nthAddr(i), 4000).String()
		}
		newLimiter := func() *httpx.Clients {
			cfg := Config{Logger: slog.New(slog.DiscardHandler)}
			cfg.setDefaults()
			return httpx.NewClients(cfg.TrustedProxies, cfg.Logger, cfg.ClientRate, cfg.ClientBurst, cfg.Now())
		}
		// attempt makes r the request of the i-th peer and counts it.
		attempt := func(l *httpx.Clients, r *http.Request, i int) {
			r.RemoteAddr = peers[i]
			now := time.Now()
			l.Take(l.ClientOf(r, now), now)
		}
		b.Run(fmt.Sprintf("addresses=%d", n), func(b *testing.B) {
			l := newLimiter()
			r := &http.Request{Header: http.Header{}}
			cpu := startCPU(b)
			i := 0
			for b.Loop() {
				attempt(l, r, i)
				if i++; i == n {
					i = 0
				}
			}
			cpu.report(b)
		})
		b.Run(fmt.Sprintf("addresses=%d/parallel", n), func(b *testing.B) {
			l := newLimiter()
			var start atomic.Int64
			cpu := startCPU(b)
			defer cpu.report(b)
			b.RunParallel(func(pb *testing.PB) {
				r := &http.Request{Header: http.Header{}}
				i := int(start.Add(int64(n/8))) % n
				for pb.Next() {
					attempt(l, r, i)
					if i++; i == n {
						i = 0
					}
				}
			})
		})
	}
}
