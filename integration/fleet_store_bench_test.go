package integration

// The SQL store as the fleet grows: login, whoami and verify-totp over
// SQLite and PostgreSQL stores seeded with 1k to 1M users and hosts,
// through the library's public API. Everything large is built inside the
// benchmark, so plain `go test` never pays for it:
//
//	go test -run '^$' -bench FleetStore -benchmem -timeout 60m ./integration
//
// -fleet.max N leaves out the fleets larger than N, for a quick run. The
// bearer check over fleets of the same sizes is the library's own
// BenchmarkFleetBearer, beside its code.

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/nmauth/nmauth"
)

// fleetMax is the largest fleet the benchmark builds.
var fleetMax = flag.Int("fleet.max", 1_000_000, "largest fleet size BenchmarkFleetStore builds")

// fleetRounds is how many times BenchmarkFleetStore measures each
// operation at each size, the operations taking turns.
var fleetRounds = flag.Int("fleet.rounds", 5, "rounds of BenchmarkFleetStore's operations at each size")

const (
	fleetPassword  = "correct horse battery staple"
	fleetMasterKey = "fleet-master-key-0123456789abcdef-0123"
	// fleetTOTPUsers is how many enrolled users verify-totp cycles
	// through: each verification needs its own pre-auth token, and a user
	// has only one at a time.
	fleetTOTPUsers = 64
	// fleetTokenTTL outlives any benchmark run, so that no token issued at
	// the start of a run expires before its end.
	fleetTokenTTL = 24 * time.Hour
	// totpPeriod is the TOTP step the library uses, in seconds.
	totpPeriod = 30
)

type fleetSize struct {
	name string
	n    int
}

// fleetSizesUpTo returns the fleet sizes of the benchmark, up to -fleet.max.
func fleetSizesUpTo() []fleetSize {
	var out []fleetSize
	for _, s := range []fleetSize{{"1k", 1_000}, {"10k", 10_000}, {"100k", 100_000}, {"1M", 1_000_000}} {
		if s.n <= *fleetMax {
			out = append(out, s)
		}
	}
	return out
}

// BenchmarkFleetStore measures login, whoami and verify-totp over SQL
// stores seeded with 1k, 10k, 100k and 1M users and as many hosts, each
// size grown from the one before. At each size, after an untimed warm-up,
// the three operations take turns for -fleet.rounds rounds, each round a
// benchmark of its own (SIZE/OP/rN). whoami checks user tokens of 1024
// accounts spread over the whole table, round-robin, with the status cache
// off, so every check reads the account from the store. Every token and
// pre-auth token comes from a login with the timer stopped, so each
// verify-totp costs a password hash untimed. PostgreSQL runs when
// NMAUTH_TEST_POSTGRES names a server.
func BenchmarkFleetStore(b *testing.B) {
	for _, d := range []nmauth.Dialect{nmauth.DialectSQLite, nmauth.DialectPostgres} {
		b.Run(string(d), func(b *testing.B) {
			db := fleetDatabase(b, d)
			store, err := nmauth.NewSQLStore(context.Background(), db, d)
			if err != nil {
				b.Fatal(err)
			}
			benchFleetStore(b, db, store, d)
		})
	}
}

func benchFleetStore(b *testing.B, db *sql.DB, store *nmauth.SQLStore, d nmauth.Dialect) {
	ctx := context.Background()
	clock := newStepClock()
	a := fleetAuth(b, store, clock)
	totpUsers := enrollFleetUsers(b, a, clock, fleetTOTPUsers)
	hash := passwordHash(b, db, totpUsers[0].name)
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
		// Warm-up, untimed: the logins that give the whoami tokens read
		// the store's pages of these accounts; checking every token twice
		// fills the token cache.
		tokens := make([]string, len(names))
		for i, login := range loginAll(b, a, names) {
			tokens[i] = login.AuthToken
		}
		checkAll(b, a, tokens)
		// The operations take turns, round after round, so that other load
		// on the machine falls on each alike; read the median of the rounds.
		for r := range *fleetRounds {
			b.Run(fmt.Sprintf("%s/login/r%d", size.name, r+1), func(b *testing.B) {
				for i := range b.N {
					if _, err := a.LoginUser(ctx, names[i%len(names)], fleetPassword); err != nil {
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

// fleetAuth returns an Authenticator over store on clock, with token
// lifetimes that outlive the run, the status cache off and no limit on an
// address's rate.
func fleetAuth(b *testing.B, store nmauth.Store, clock *stepClock) *nmauth.Authenticator {
	b.Helper()
	mk, err := nmauth.NewMasterKey(fleetMasterKey, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	secret := make([]byte, 32)
	crand.Read(secret)
	a, err := nmauth.New(nmauth.Config{
		Store:          store,
		Secrets:        [][]byte{secret},
		MasterKey:      mk,
		Now:            clock.Now,
		UserTokenTTL:   fleetTokenTTL,
		StatusCacheTTL: -1,
		ClientRate:     -1,
	})
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// stepClock stands still but for whole TOTP steps, so that each batch of
// verifications has codes no earlier one used.
type stepClock struct {
	base time.Time
	step atomic.Int64
}

func newStepClock() *stepClock {
	return &stepClock{base: time.Now().Truncate(totpPeriod * time.Second)}
}

func (c *stepClock) Now() time.Time {
	return c.base.Add(time.Duration(c.step.Load()) * totpPeriod * time.Second)
}

func (c *stepClock) tick() { c.step.Add(1) }

// fleetTOTPUser is an enrolled user and the base32 secret of its TOTP.
type fleetTOTPUser struct {
	name, secret string
}

// enrollFleetUsers creates n users with fleetPassword and turns TOTP on
// for each, as the master key does for a user.
func enrollFleetUsers(b *testing.B, a *nmauth.Authenticator, clock *stepClock, n int) []fleetTOTPUser {
	b.Helper()
	ctx := context.Background()
	master, err := a.CheckBearer(ctx, fleetMasterKey)
	if err != nil {
		b.Fatal(err)
	}
	users := make([]fleetTOTPUser, n)
	for i := range users {
		name := fmt.Sprintf("totp-%03d", i)
		if err := a.Admin().CreateUser(ctx, name, fleetPassword); err != nil {
			b.Fatal(err)
		}
		e, err := a.InitTOTP(ctx, master, name)
		if err != nil {
			b.Fatal(err)
		}
		u, err := url.Parse(e.URL)
		if err != nil {
			b.Fatal(err)
		}
		secret := u.Query().Get("secret")
		if _, err := a.CompleteTOTP(ctx, master, name, e.URL, e.Signature, totpCode(b, secret, clock.Now()), ""); err != nil {
			b.Fatalf("CompleteTOTP(%s): %v", name, err)
		}
		users[i] = fleetTOTPUser{name, secret}
	}
	return users
}

// totpCode computes the code of secret at t with pquerna/otp, not with
// the library.
func totpCode(b *testing.B, secret string, t time.Time) string {
	code, err := totp.GenerateCodeCustom(secret, t, totp.ValidateOpts{Period: totpPeriod, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		b.Fatal(err)
	}
	return code
}

// passwordHash returns the hash the store holds for the user name.
func passwordHash(b *testing.B, db *sql.DB, name string) string {
	b.Helper()
	var hash string
	if err := db.QueryRow("SELECT password_hash FROM nmauth_users WHERE name = '" + name + "'").Scan(&hash); err != nil {
		b.Fatal(err)
	}
	return hash
}

// loginAll logs every name in with fleetPassword, on every core at once,
// and returns the logins in the order of names.
func loginAll(b *testing.B, a *nmauth.Authenticator, names []string) []nmauth.UserLogin {
	b.Helper()
	logins := make([]nmauth.UserLogin, len(names))
	errs := make([]error, len(names))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(names); i = int(next.Add(1) - 1) {
				logins[i], errs[i] = a.LoginUser(context.Background(), names[i], fleetPassword)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	// The hashes' garbage is collected here, not in the timed code after.
	runtime.GC()
	return logins
}

// checkAll checks every token twice, so that the caches hold them: the
// token cache takes a token on its second check.
func checkAll(b *testing.B, a *nmauth.Authenticator, tokens []string) {
	b.Helper()
	for range 2 {
		for _, tok := range tokens {
			if _, err := a.CheckBearer(context.Background(), tok); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// pendingVerification is one verify-totp call made ready outside the timer.
type pendingVerification struct {
	user, preAuth, code string
}

// benchVerifyTOTP runs b.N verifications of users, whose Authenticator a
// runs on clock. Pre-auth tokens and codes are made in batches with the
// timer stopped: a token comes from a login with the right password, and
// the codes from pquerna/otp, not from the library.
func benchVerifyTOTP(b *testing.B, a *nmauth.Authenticator, clock *stepClock, users []fleetTOTPUser) {
	ctx := context.Background()
	names := make([]string, len(users))
	for i, u := range users {
		names[i] = u.name
	}
	prepare := func(n int) []pendingVerification {
		clock.tick()
		batch := make([]pendingVerification, n)
		for i, login := range loginAll(b, a, names[:n]) {
			if !login.TOTPRequired || login.PreAuthToken == "" {
				b.Fatalf("login of %s: %+v, want a pre-auth token", names[i], login)
			}
			batch[i] = pendingVerification{names[i], login.PreAuthToken, totpCode(b, users[i].secret, clock.Now())}
		}
		return batch
	}
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		b.StopTimer()
		batch := prepare(min(len(users), b.N-done))
		b.StartTimer()
		for _, v := range batch {
			if out, err := a.VerifyTOTP(ctx, v.preAuth, v.user, v.code); err != nil || out.AuthToken == "" {
				b.Fatalf("VerifyTOTP(%s): %+v, %v", v.user, out, err)
			}
		}
		done += len(batch)
	}
}

// fleetUserName names the i-th seeded user.
func fleetUserName(i int) string { return fmt.Sprintf("user-%07d", i) }

// seedFleet adds users and hosts from up to to (not included) in one
// statement each, all with the one password hash, and refreshes the
// planner's statistics.
func seedFleet(b *testing.B, db *sql.DB, d nmauth.Dialect, from, to int, hash string) {
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
	case nmauth.DialectSQLite:
		seq := "(WITH RECURSIVE seq(i) AS (SELECT $1 UNION ALL SELECT i + 1 FROM seq WHERE i + 1 < $2) SELECT i FROM seq)"
		stmts = []string{
			fmt.Sprintf(users, "printf('user-%07d', i)", "0", seq),
			fmt.Sprintf(hosts, "printf('host-%07d', i)", "0", seq),
			"ANALYZE",
		}
	case nmauth.DialectPostgres:
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
		case d == nmauth.DialectSQLite:
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
func fleetDatabase(b *testing.B, d nmauth.Dialect) *sql.DB {
	b.Helper()
	if d == nmauth.DialectSQLite {
		db, err := sql.Open("sqlite", nmauth.SQLiteDSN(filepath.Join(b.TempDir(), "fleet.db")))
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
