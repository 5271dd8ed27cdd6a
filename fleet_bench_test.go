//go:build unix

package nmauth

// Benchmarks of cost as the fleet grows: the bearer check over 1k to 1M
// live tokens, the memory its caches take, and login, whoami and
// verify-totp over SQLite and PostgreSQL stores seeded with 1k to 1M users
// and hosts. Everything large is built inside the benchmarks, so plain
// `go test` never pays for it:
//
//	go test -run '^$' -bench 'Fleet' -benchmem -timeout 60m .
//
// -fleet.max N leaves out the fleets larger than N, for a quick run.

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"
)

// fleetMax is the largest fleet the benchmarks build.
var fleetMax = flag.Int("fleet.max", 1_000_000, "largest fleet size the Fleet benchmarks build")

// fleetRounds is how many times BenchmarkFleetStore measures each
// operation at each size, the operations taking turns.
var fleetRounds = flag.Int("fleet.rounds", 5, "rounds of BenchmarkFleetStore's operations at each size")

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

// BenchmarkFleetBearer checks node tokens round-robin over fleets of 1k to
// 1M nodes: "cached" with the default token cache, filled first when the
// fleet fits in it, and "nocache" with TokenCacheSize = -1, the cost of a
// parse on every check. 1M is more than the cache holds, so there nearly
// every check misses.
func BenchmarkFleetBearer(b *testing.B) {
	ctx := context.Background()
	for _, size := range fleetSizesUpTo() {
		tokens := fleetNodeTokens(b, size.n)
		for _, mode := range []struct {
			name      string
			cacheSize int
		}{{"cached", 0}, {"nocache", -1}} {
			b.Run(size.name+"/"+mode.name, func(b *testing.B) {
				a := fleetAuth(b, NewMemoryStore(), func(c *Config) { c.TokenCacheSize = mode.cacheSize })
				if mode.cacheSize == 0 && size.n <= a.cfg.TokenCacheSize {
					checkAll(b, a, tokens)
				}
				b.ReportAllocs()
				b.ResetTimer()
				cpu := startCPU(b)
				for i := range b.N {
					if _, err := a.CheckBearer(ctx, tokens[i%len(tokens)]); err != nil {
						b.Fatal(err)
					}
				}
				cpu.report(b)
			})
		}
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

// BenchmarkFleetStore measures login, whoami and verify-totp over SQL
// stores seeded with 1k, 10k, 100k and 1M users and as many hosts, each
// size grown from the one before. At each size, after an untimed warm-up,
// the three operations take turns for -fleet.rounds rounds, each round a
// benchmark of its own (SIZE/OP/rN). whoami checks user tokens of 1024
// accounts spread over the whole table, round-robin, with the status cache
// off, so every check reads the account from the store. PostgreSQL runs
// when NMAUTH_TEST_POSTGRES names a server.
func BenchmarkFleetStore(b *testing.B) {
	for _, d := range []Dialect{DialectSQLite, DialectPostgres} {
		b.Run(string(d), func(b *testing.B) {
			db := fleetDatabase(b, d)
			store, err := NewSQLStore(context.Background(), db, d)
			if err != nil {
				b.Fatal(err)
			}
			benchFleetStore(b, db, store, d)
		})
	}
}

func benchFleetStore(b *testing.B, db *sql.DB, store *SQLStore, d Dialect) {
	ctx := context.Background()
	clock := newStepClock()
	a := fleetAuth(b, store, func(c *Config) {
		c.Now = clock.Now
		c.StatusCacheTTL = -1
		c.ClientRate = -1
	})
	hash, err := a.hasher.hash(ctx, benchPassword)
	if err != nil {
		b.Fatal(err)
	}
	totpUsers := enrollBenchUsers(b, a, store, totpBenchUsers)
	seeded := 0
	for _, size := range fleetSizesUpTo() {
		start := time.Now()
		seedFleet(b, db, d, seeded, size.n, hash)
		b.Logf("%s: seeded users and hosts %d to %d in %v", d, seeded, size.n, time.Since(start).Round(time.Millisecond))
		seeded = size.n
		names := make([]string, 1024)
		for i := range names {
			names[i] = fleetUserName(rand.IntN(size.n))
		}
		tokens := make([]string, len(names))
		seededGeneration := uint64(0)
		for i, name := range names {
			if tokens[i], _, err = a.minter.mint(mintArgs{kind: kindUser, subject: name, issuedAt: clock.Now(), ttl: fleetTokenTTL, generation: &seededGeneration}); err != nil {
				b.Fatal(err)
			}
		}
		// Warm-up, untimed: the store's pages of these accounts, the
		// token cache, the connection pool.
		for i := range names {
			if _, err := a.LoginUser(ctx, names[i], benchPassword); err != nil {
				b.Fatal(err)
			}
			if i == 8 {
				break
			}
		}
		checkAll(b, a, tokens)
		// The operations take turns, round after round, so that other load
		// on the machine falls on each alike; read the median of the rounds.
		for r := range *fleetRounds {
			b.Run(fmt.Sprintf("%s/login/r%d", size.name, r+1), func(b *testing.B) {
				for i := range b.N {
					if _, err := a.LoginUser(ctx, names[i%len(names)], benchPassword); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("%s/whoami/r%d", size.name, r+1), func(b *testing.B) {
				for i := range b.N {
					if _, err := a.CheckBearer(ctx, tokens[i%len(tokens)]); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("%s/verify-totp/r%d", size.name, r+1), func(b *testing.B) {
				benchVerifyTOTP(b, a, clock, totpUsers)
			})
		}
	}
}

// fleetUserName names the i-th seeded user.
func fleetUserName(i int) string { return fmt.Sprintf("user-%07d", i) }

// seedFleet adds users and hosts from up to to (not included) in one
// statement each, all with the one password hash, and refreshes the
// planner's statistics.
func seedFleet(b *testing.B, db *sql.DB, d Dialect, from, to int, hash string) {
	b.Helper()
	users := `INSERT INTO nmauth_users (name, password_hash, disabled, totp_secret, totp_last_step,
	totp_failures, totp_blocked_until, preauth_id, preauth_failures, recovery_codes,
	password_failures, password_blocked_until, password_clients, generation, created_at)
SELECT %s, $3, %s, NULL, 0, 0, 0, '', 0, '[]', 0, 0, '[]', 0, 1 FROM %s`
	hosts := `INSERT INTO nmauth_hosts (id, mac_address, password_hash, disabled,
	password_failures, password_blocked_until, password_clients, generation, created_at)
SELECT %s, '', $3, %s, 0, 0, '[]', 0, 1 FROM %s`
	var stmts []string
	switch d {
	case DialectSQLite:
		seq := "(WITH RECURSIVE seq(i) AS (SELECT $1 UNION ALL SELECT i + 1 FROM seq WHERE i + 1 < $2) SELECT i FROM seq)"
		stmts = []string{
			fmt.Sprintf(users, "printf('user-%07d', i)", "0", seq),
			fmt.Sprintf(hosts, "printf('host-%07d', i)", "0", seq),
			"ANALYZE",
		}
	case DialectPostgres:
		seq := "generate_series($1::bigint, $2::bigint - 1) AS i"
		stmts = []string{
			fmt.Sprintf(users, "'user-' || lpad(i::text, 7, '0')", "false", seq),
			fmt.Sprintf(hosts, "'host-' || lpad(i::text, 7, '0')", "false", seq),
			"ANALYZE nmauth_users", "ANALYZE nmauth_hosts",
		}
	}
	for _, s := range stmts {
		var args []any
		switch {
		case !strings.Contains(s, "$3"):
		case d == DialectSQLite:
			// The hash comes first in the text, then the bounds.
			s = strings.NewReplacer("$1", "?", "$2", "?", "$3", "?").Replace(s)
			args = []any{hash, from, to}
		default:
			args = []any{from, to, hash}
		}
		if _, err := db.Exec(s, args...); err != nil {
			b.Fatalf("seeding %d to %d: %v", from, to, err)
		}
	}
}

// fleetDatabase opens an empty database of dialect d for one benchmark and
// removes it when the benchmark ends.
func fleetDatabase(b *testing.B, d Dialect) *sql.DB {
	b.Helper()
	if d == DialectSQLite {
		db, err := sql.Open("sqlite", SQLiteDSN(filepath.Join(b.TempDir(), "fleet.db")))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		return db
	}
	dsn := os.Getenv("NMAUTH_TEST_POSTGRES")
	if dsn == "" {
		b.Skip("PostgreSQL benchmarks need NMAUTH_TEST_POSTGRES")
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	admin := stdlib.OpenDB(*cfg)
	schema := "nmauth_fleet_" + strings.ToLower(crand.Text())
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		b.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = schema
	db := stdlib.OpenDB(*cfg)
	b.Cleanup(func() {
		db.Close()
		if _, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			b.Errorf("dropping schema %s: %v", schema, err)
		}
		admin.Close()
	})
	return db
}
