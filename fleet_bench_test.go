//go:build unix

package nmauth

// Benchmarks of cost as the fleet grows: the bearer check over 1k to 1M
// live tokens, and the memory its caches take. Everything large is built
// inside the benchmarks, so plain `go test` never pays for it:
//
//	go test -run '^$' -bench 'Fleet' -benchmem -timeout 60m .
//
// -fleet.max N leaves out the fleets larger than N, for a quick run. The
// same sizes over the SQL store are BenchmarkFleetStore, in the
// integration module, which has the SQL drivers.

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// fleetMax is the largest fleet the benchmarks build.
var fleetMax = flag.Int("fleet.max", 1_000_000, "largest fleet size the Fleet benchmarks build")

type fleetSize struct {
	name string
	n    int
}

// fleetSizesUpTo returns the fleet sizes of the benchmarks, up to -fleet.max.
func fleetSizesUpTo() []fleetSize {
	var out []fleetSize
	for _, s := range []fleetSize{{"1k", 1_000}, {"10k", 10_000}, {"100k", 100_000}, {"1M", 1_000_000}} {
		if s.n <= *fleetMax {
			out = append(out, s)
		}
	}
	return out
}

// fleetTokenTTL outlives any benchmark run, so that no token minted at the
// start of a run expires before its end.
const fleetTokenTTL = 24 * time.Hour

// fleetAuth is benchAuth with token lifetimes that outlive the run.
func fleetAuth(tb testing.TB, store Store, tweak func(*Config)) *Authenticator {
	return benchAuth(tb, store, func(c *Config) {
		c.NodeTokenTTL, c.HostTokenTTL, c.UserTokenTTL = fleetTokenTTL, fleetTokenTTL, fleetTokenTTL
		if tweak != nil {
			tweak(c)
		}
	})
}

// fleetNodes holds node tokens minted once per process and shared by the
// benchmarks: the first n of them are a fleet of n nodes.
var fleetNodes struct {
	sync.Mutex
	tokens []string
}

// fleetNodeTokens returns n live node tokens, valid for every fleetAuth.
func fleetNodeTokens(b *testing.B, n int) []string {
	b.Helper()
	fleetNodes.Lock()
	defer fleetNodes.Unlock()
	if len(fleetNodes.tokens) < n {
		a := fleetAuth(b, NewMemoryStore(), nil)
		for i := len(fleetNodes.tokens); i < n; i++ {
			tok, err := a.IssueNodeToken(b.Context(), "net-1", fmt.Sprintf("node-%07d", i))
			if err != nil {
				b.Fatal(err)
			}
			fleetNodes.tokens = append(fleetNodes.tokens, tok)
		}
	}
	return fleetNodes.tokens[:n]
}

// BenchmarkFleetBearer checks node tokens of fleets of 1k to 1M nodes in
// a random order: "cached" with the default token cache, filled first,
// which holds every fleet, and "nocache" with TokenCacheSize = -1, the
// cost of a parse on every check. Run all sizes in one run, and compare
// each size's cpu-ns/op with 1k's.
//
// "cached" reads the tokens one after another from copies made in the
// order of the checks, as a server reads each from the request it just
// received, while what the cache holds of them is met in an order that
// has nothing to do with the order it was stored in: at 1M nearly every
// check's lookup reads memory that the processor's caches do not hold.
// "cached-random" draws each token at random from the tokens as they
// were minted, so it also pays for reading the token from memory.
func BenchmarkFleetBearer(b *testing.B) {
	ctx := context.Background()
	for _, size := range fleetSizesUpTo() {
		tokens := fleetNodeTokens(b, size.n)
		order := rand.New(rand.NewPCG(1, uint64(size.n)))
		inTurn := make([]string, len(tokens))
		for i, j := range order.Perm(len(tokens)) {
			inTurn[i] = strings.Clone(tokens[j])
		}
		cached := fleetAuth(b, NewMemoryStore(), nil)
		checkAll(b, cached, tokens)
		for _, mode := range []struct {
			name string
			a    *Authenticator
			next func(i int) string
		}{
			{"cached", cached, func(i int) string { return inTurn[i%len(inTurn)] }},
			{"cached-random", cached, func(int) string { return tokens[order.IntN(len(tokens))] }},
			{"nocache", fleetAuth(b, NewMemoryStore(), func(c *Config) { c.TokenCacheSize = -1 }), func(i int) string { return inTurn[i%len(inTurn)] }},
		} {
			b.Run(size.name+"/"+mode.name, func(b *testing.B) {
				hits := mode.a.Stats().TokenCache.Hits
				b.ReportAllocs()
				b.ResetTimer()
				cpu := startCPU(b)
				for i := range b.N {
					if _, err := mode.a.CheckBearer(ctx, mode.next(i)); err != nil {
						b.Fatal(err)
					}
				}
				cpu.report(b)
				b.ReportMetric(float64(mode.a.Stats().TokenCache.Hits-hits)/float64(b.N), "hits/op")
			})
		}
		b.Run(size.name+"/memory-read", func(b *testing.B) {
			benchMemoryRead(b, cached.tokens.Slots())
		})
		runtime.KeepAlive(inTurn)
	}
}

// benchMemoryRead reads, each read's place given by the one before, at
// random among n places laid out as the token cache's slots are: the cost
// on this machine of one read of the cache's table that its caches do not
// hold, the floor under a check at the fleet's size (a hit reads its
// token's home slot, which no check before it brought in).
func benchMemoryRead(b *testing.B, n int) {
	type place struct {
		next uint64
		_    [unsafe.Sizeof(tokenSlot{}) - 8]byte
	}
	table := make([]place, n)
	order := rand.New(rand.NewPCG(2, uint64(n))).Perm(n)
	for i, p := range order {
		table[p].next = uint64(order[(i+1)%n])
	}
	at := uint64(order[0])
	b.ResetTimer()
	cpu := startCPU(b)
	for range b.N {
		at = table[at].next
	}
	cpu.report(b)
	runtime.KeepAlive(at)
}

// BenchmarkFleetTokenCacheMemory reports the heap that the token cache
// takes for fleets of 1k to 1M nodes, each with one node token (which
// no account's standing decides, so the status cache holds nothing),
// after every token was checked twice: B/token, the growth of the live
// heap from before New to after the checks, divided by the tokens held.
func BenchmarkFleetTokenCacheMemory(b *testing.B) {
	for _, size := range fleetSizesUpTo() {
		tokens := fleetNodeTokens(b, size.n)
		b.Run(size.name, func(b *testing.B) {
			var grown uint64
			var held int
			for range b.N {
				before := liveHeap()
				a := fleetAuth(b, NewMemoryStore(), nil)
				checkAll(b, a, tokens)
				grown = liveHeap() - before
				held = a.Stats().TokenCache.Size
				runtime.KeepAlive(a)
			}
			// The cache, of the default size, holds every fleet whole.
			if held != len(tokens) {
				b.Fatalf("the cache holds %d of %d tokens", held, len(tokens))
			}
			b.ReportMetric(float64(grown)/float64(held), "B/token")
			b.ReportMetric(float64(held), "tokens")
		})
	}
}

// BenchmarkFleetBearerParallel checks 100k cached node tokens from every
// core at once; run it with -cpu 1,2 to compare one core with two.
func BenchmarkFleetBearerParallel(b *testing.B) {
	ctx := context.Background()
	tokens := fleetNodeTokens(b, 100_000)
	a := fleetAuth(b, NewMemoryStore(), nil)
	checkAll(b, a, tokens)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU(b)
	b.RunParallel(func(pb *testing.PB) {
		i := rand.IntN(len(tokens))
		for pb.Next() {
			if _, err := a.CheckBearer(ctx, tokens[i%len(tokens)]); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
	cpu.report(b)
}

// BenchmarkFleetCacheMemory reports the heap that the bearer caches take
// for a fleet of 100k hosts, each with one live host token: the token
// cache and the status cache, after every token was checked twice. It
// reports cache-MiB, the growth of the live heap, and B/token.
func BenchmarkFleetCacheMemory(b *testing.B) {
	ctx := context.Background()
	const hosts = 100_000
	store := NewMemoryStore()
	minter := fleetAuth(b, store, nil)
	tokens := make([]string, hosts)
	// Every host is created at generation 0, the generation of its token.
	hostGeneration := uint64(0)
	for i := range tokens {
		id := fmt.Sprintf("host-%07d", i)
		if err := store.CreateHost(ctx, Host{ID: id, PasswordHash: "unused"}); err != nil {
			b.Fatal(err)
		}
		tok, _, err := minter.minter.mint(mintArgs{kind: kindHost, subject: id, issuedAt: minter.now(), ttl: fleetTokenTTL, generation: &hostGeneration})
		if err != nil {
			b.Fatal(err)
		}
		tokens[i] = tok
	}
	var grown uint64
	for range b.N {
		before := liveHeap()
		a := fleetAuth(b, store, func(c *Config) { c.StatusCacheTTL = time.Hour })
		checkAll(b, a, tokens)
		grown = liveHeap() - before
		runtime.KeepAlive(a)
	}
	b.ReportMetric(float64(grown)/(1<<20), "cache-MiB")
	b.ReportMetric(float64(grown)/hosts, "B/token")
}

// checkAll checks every token twice, so that the caches hold them: the
// token cache takes a token on its second check.
func checkAll(b *testing.B, a *Authenticator, tokens []string) {
	b.Helper()
	for range 2 {
		for _, tok := range tokens {
			if _, err := a.CheckBearer(context.Background(), tok); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
