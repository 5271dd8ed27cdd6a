package nmauth

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"
)

// BenchmarkHostCredentialMemory reports the heap that the cache of machine
// credentials takes for 100k hosts, each known to the one address it logs
// in from, with a UUID for its id and a MAC address: B/host, the growth of
// the live heap over three logins of every host (the first writes the
// address, the second reads the host and caches it, the third is granted
// from the cache) with the cache on, less the same with it off
// (StatusCacheTTL -1), divided by the hosts. The host's place in the
// status cache is counted, which a host whose tokens are checked has
// anyway.
func BenchmarkHostCredentialMemory(b *testing.B) {
	const hosts = 100_000
	ctx := context.Background()
	store := NewMemoryStore()
	maker := fleetAuth(b, store, nil)
	ids := make([]string, hosts)
	secrets := make([]string, hosts)
	for i := range ids {
		ids[i] = fmt.Sprintf("%08x-4f89-11d3-9a0c-0305e82c3301", i)
		secrets[i] = fmt.Sprintf("ABCDEFGHIJKLMNOPQRSTUVWX%08d", i)
		h := Host{ID: ids[i], MACAddress: "aa:bb:cc:dd:ee:ff", PasswordHash: maker.ring.DigestMachineSecret(ids[i], secrets[i])}
		if err := store.CreateHost(ctx, h); err != nil {
			b.Fatal(err)
		}
	}
	grown := func(ttl time.Duration) int64 {
		before := liveHeap()
		a := fleetAuth(b, store, func(c *Config) { c.StatusCacheTTL, c.StatusCacheSize = ttl, 2*hosts })
		for round := range 3 {
			for i, id := range ids {
				from := WithClientAddr(ctx, netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}))
				if _, err := a.LoginHost(from, id, "aa:bb:cc:dd:ee:ff", secrets[i]); err != nil {
					b.Fatal(err)
				}
			}
			if err := a.Shutdown(ctx); err != nil {
				b.Fatal(err)
			}
			if _, _, size := a.status.Counts(0); round == 2 && ttl > 0 && size < hosts {
				b.Fatalf("%d hosts in the status cache, want %d", size, hosts)
			}
		}
		g := int64(liveHeap()) - int64(before)
		runtime.KeepAlive(a)
		return g
	}
	var on, off int64
	for range b.N {
		on, off = grown(time.Hour), grown(-1)
	}
	b.ReportMetric(float64(on-off)/hosts, "B/host")
}
