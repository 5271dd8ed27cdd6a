//go:build unix

package nmauth

// Benchmarks of the costs a deployment pays per request, each beside the
// raw primitive it is built on, so that BENCHMARKS.md can give every figure
// as a ratio to a baseline taken in the same run:
//
//	go test -run '^$' -bench . -benchmem -count 5
//
// `go test -run XXX -bench . -benchtime 1x` runs each once as a smoke test.
//
// Besides ns/op, each benchmark reports cpu-ns/op: the CPU time of the
// whole process (every thread, the garbage collector's too) per
// operation. On a machine shared with other work, wall time counts the
// time the benchmark waited for a core; CPU time does not, so it is the
// steadier figure of cost.

import (
	"bytes"
	"context"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"

	"github.com/nmauth/nmauth/internal/hashfmt"
	"github.com/nmauth/nmauth/internal/jwtkind"
	"github.com/nmauth/nmauth/internal/otpauth"
)

const (
	benchMasterKey = "bench-master-key-0123456789abcdef-0123"
	benchUser      = "alice"
	benchHost      = "host-1"
	benchPassword  = "correct horse battery staple"
)

// cpuClock measures the CPU time the process spends in a benchmark loop.
type cpuClock struct{ start time.Duration }

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU(b *testing.B) cpuClock { return cpuClock{processCPU(b)} }

// report adds cpu-ns/op; call it after the loop, when b.N is the number
// of iterations that ran.
func (c cpuClock) report(b *testing.B) {
	if b.N > 0 {
		b.ReportMetric(float64(processCPU(b)-c.start)/float64(b.N), "cpu-ns/op")
	}
}

func benchSecret(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

// stepClock is a Config.Now driven by a counter: each tick moves time on by
// one TOTP step, so every verification can use a step not yet accepted.
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

// benchAuth returns an Authenticator over store with the first benchmark
// secret and master key; tweak adjusts its Config.
func benchAuth(tb testing.TB, store Store, tweak func(*Config)) *Authenticator {
	tb.Helper()
	mk, err := NewMasterKey(benchMasterKey, false, nil)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := Config{Store: store, Secrets: [][]byte{benchSecret(1)}, MasterKey: mk}
	if tweak != nil {
		tweak(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// benchCredentials are one bearer credential of each kind, valid for the
// Authenticators of benchBearer.
type benchCredentials struct {
	user, access, host, node, master, forged string
}

// benchBearer returns two Authenticators over one store and root secret,
// the first with the default token cache and the second with none, and a
// credential of each kind that both accept (the forged one neither).
func benchBearer(tb testing.TB) (warm, cold *Authenticator, creds benchCredentials) {
	tb.Helper()
	ctx := context.Background()
	store := NewMemoryStore()
	// The hash is never checked here, so no argon2id run is spent on it.
	if err := store.CreateUser(ctx, User{Name: benchUser, PasswordHash: "unused"}); err != nil {
		tb.Fatal(err)
	}
	if err := store.CreateHost(ctx, Host{ID: benchHost, PasswordHash: "unused"}); err != nil {
		tb.Fatal(err)
	}
	warm = benchAuth(tb, store, nil)
	cold = benchAuth(tb, store, func(c *Config) { c.TokenCacheSize = -1 })

	login, err := grantLogin(ctx, warm, benchUser)
	if err != nil {
		tb.Fatal(err)
	}
	hostGen := uint64(0)
	host, _, err := warm.minter.mint(mintArgs{kind: kindHost, subject: benchHost, issuedAt: time.Now(), ttl: warm.cfg.HostTokenTTL, generation: &hostGen})
	if err != nil {
		tb.Fatal(err)
	}
	node, err := warm.IssueNodeToken(ctx, "home", "node-1")
	if err != nil {
		tb.Fatal(err)
	}
	_, access, err := warm.CreateAccessToken(ctx, Principal{Kind: KindMaster}, AccessTokenRequest{Name: "bench", UserName: benchUser})
	if err != nil {
		tb.Fatal(err)
	}
	return warm, cold, benchCredentials{
		user:   login.AuthToken,
		access: access,
		host:   host,
		node:   node,
		master: benchMasterKey,
		forged: forgeUserToken(tb, warm.ring.Signer().ID),
	}
}

// forgeUserToken returns a well-formed user token that carries the real
// key id but is signed with another root secret: the check runs up to the
// signature comparison and fails there.
func forgeUserToken(tb testing.TB, kid string) string {
	tb.Helper()
	other := benchAuth(tb, NewMemoryStore(), func(c *Config) { c.Secrets = [][]byte{benchSecret(9)} })
	tok, _, err := other.minter.mint(mintArgs{kind: kindUser, subject: benchUser, issuedAt: time.Now(), ttl: other.cfg.UserTokenTTL})
	if err != nil {
		tb.Fatal(err)
	}
	header, rest, _ := strings.Cut(tok, ".")
	raw, err := base64.RawURLEncoding.DecodeString(header)
	if err != nil {
		tb.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(raw, &h); err != nil {
		tb.Fatal(err)
	}
	h["kid"] = kid
	if raw, err = json.Marshal(h); err != nil {
		tb.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(raw) + "." + rest
}

func BenchmarkCheckBearer(b *testing.B) {
	warm, cold, creds := benchBearer(b)
	cases := []struct {
		name, credential string
		wantErr          bool
	}{
		{"user", creds.user, false},
		{"access", creds.access, false},
		{"host", creds.host, false},
		{"node", creds.node, false},
		{"master", creds.master, false},
		{"forged", creds.forged, true},
	}
	ctx := context.Background()
	for _, tc := range cases {
		for _, mode := range []struct {
			name string
			auth *Authenticator
		}{{"warm", warm}, {"cold", cold}} {
			b.Run(tc.name+"/"+mode.name, func(b *testing.B) {
				b.ReportAllocs()
				cpu := startCPU(b)
				for b.Loop() {
					if _, err := mode.auth.CheckBearer(ctx, tc.credential); (err != nil) != tc.wantErr {
						b.Fatalf("CheckBearer: %v", err)
					}
				}
				cpu.report(b)
			})
		}
	}
	// The cached path under both cores at once, as a server sees it.
	b.Run("user/warm-parallel", func(b *testing.B) {
		b.ReportAllocs()
		cpu := startCPU(b)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := warm.CheckBearer(ctx, creds.user); err != nil {
					b.Error(err)
					return
				}
			}
		})
		cpu.report(b)
	})
}

// BenchmarkRawHS256Parse is the baseline of CheckBearer: golang-jwt parsing
// the very same user token into RegisteredClaims with the same key, with
// only the algorithm allow-list ("bare") and with the validations
// CheckBearer asks for ("validated").
func BenchmarkRawHS256Parse(b *testing.B) {
	warm, _, creds := benchBearer(b)
	key := warm.ring.Signer().JWT[kindUser]
	keyFunc := func(*jwt.Token) (any, error) { return key, nil }
	parsers := []struct {
		name   string
		parser *jwt.Parser
	}{
		{"bare", jwt.NewParser(jwt.WithValidMethods([]string{"HS256"}))},
		{"validated", jwt.NewParser(
			jwt.WithValidMethods([]string{"HS256"}),
			jwt.WithExpirationRequired(),
			jwt.WithIssuer("nmauth"),
			jwt.WithAudience(jwtkind.Audience[kindUser]),
			jwt.WithStrictDecoding(),
		)},
	}
	for _, p := range parsers {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := startCPU(b)
			for b.Loop() {
				var c jwt.RegisteredClaims
				if _, err := p.parser.ParseWithClaims(creds.user, &c, keyFunc); err != nil {
					b.Fatal(err)
				}
			}
			cpu.report(b)
		})
	}
}

// TestCheckBearerWarmAllocs holds the common case, a client presenting the
// token it used before, to the allocation budget of issue 5.
func TestCheckBearerWarmAllocs(t *testing.T) {
	warm, _, creds := benchBearer(t)
	const budget = 15
	ctx := context.Background()
	for _, tc := range []struct{ name, credential string }{
		{"user", creds.user},
		{"host", creds.host},
		{"node", creds.node},
		{"master", creds.master},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := warm.CheckBearer(ctx, tc.credential); err != nil {
				t.Fatalf("CheckBearer: %v", err)
			}
			allocs := testing.AllocsPerRun(100, func() {
				if _, err := warm.CheckBearer(ctx, tc.credential); err != nil {
					t.Fatalf("CheckBearer: %v", err)
				}
			})
			if allocs > budget {
				t.Errorf("CheckBearer of a %s credential seen before: %v allocations, want at most %d", tc.name, allocs, budget)
			}
		})
	}
}

// benchLoginAuth returns an Authenticator with benchUser stored under a
// real argon2id hash of benchPassword.
func benchLoginAuth(b *testing.B) (*Authenticator, *MemoryStore) {
	b.Helper()
	store := NewMemoryStore()
	a := benchAuth(b, store, nil)
	if err := a.Admin().CreateUser(context.Background(), benchUser, benchPassword); err != nil {
		b.Fatal(err)
	}
	return a, store
}

func BenchmarkLoginUser(b *testing.B) {
	ctx := context.Background()
	b.Run("argon2id", func(b *testing.B) {
		a, _ := benchLoginAuth(b)
		b.ReportAllocs()
		cpu := startCPU(b)
		for b.Loop() {
			if out, err := a.LoginUser(ctx, benchUser, benchPassword); err != nil || out.AuthToken == "" {
				b.Fatalf("LoginUser: %+v, %v", out, err)
			}
		}
		cpu.report(b)
	})
	b.Run("argon2id-parallel", func(b *testing.B) {
		a, _ := benchLoginAuth(b)
		b.ReportAllocs()
		cpu := startCPU(b)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := a.LoginUser(ctx, benchUser, benchPassword); err != nil {
					b.Error(err)
					return
				}
			}
		})
		cpu.report(b)
	})
	// An imported bcrypt hash (cost 10) is upgraded by the login that
	// verifies it, so every iteration puts it back: the figure is the first
	// login of an imported user, bcrypt plus one argon2id hash.
	b.Run("bcrypt-import", func(b *testing.B) {
		a, store := benchLoginAuth(b)
		imported, err := bcrypt.GenerateFromPassword([]byte(benchPassword), bcrypt.DefaultCost)
		if err != nil {
			b.Fatal(err)
		}
		setHash := func(u *User) error { u.PasswordHash = string(imported); return nil }
		b.ReportAllocs()
		cpu := startCPU(b)
		for b.Loop() {
			if err := store.UpdateUser(ctx, benchUser, setHash); err != nil {
				b.Fatal(err)
			}
			if _, err := a.LoginUser(ctx, benchUser, benchPassword); err != nil {
				b.Fatalf("LoginUser: %v", err)
			}
		}
		cpu.report(b)
		if u, _ := store.GetUser(ctx, benchUser); !bytes.HasPrefix([]byte(u.PasswordHash), []byte(hashfmt.Argon2idPrefix)) {
			b.Fatalf("the bcrypt hash was not upgraded: %.10s…", u.PasswordHash)
		}
	})
}

// BenchmarkRawArgon2id is the baseline of login: one argon2.IDKey at the
// parameters of new hashes, alone and on every core at once.
func BenchmarkRawArgon2id(b *testing.B) {
	salt := bytes.Repeat([]byte{0x5a}, hashfmt.SaltLen)
	p := hashfmt.Current()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		cpu := startCPU(b)
		for b.Loop() {
			argon2.IDKey([]byte(benchPassword), salt, p.Time, p.Memory, p.Threads, hashfmt.KeyLen)
		}
		cpu.report(b)
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		cpu := startCPU(b)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				argon2.IDKey([]byte(benchPassword), salt, p.Time, p.Memory, p.Threads, hashfmt.KeyLen)
			}
		})
		cpu.report(b)
	})
}

// BenchmarkRawBcrypt is the bcrypt half of the bcrypt-import login.
func BenchmarkRawBcrypt(b *testing.B) {
	hash, err := bcrypt.GenerateFromPassword([]byte(benchPassword), bcrypt.DefaultCost)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := startCPU(b)
	for b.Loop() {
		if err := bcrypt.CompareHashAndPassword(hash, []byte(benchPassword)); err != nil {
			b.Fatal(err)
		}
	}
	cpu.report(b)
}

// totpBenchUsers is how many enrolled users BenchmarkVerifyTOTP cycles
// through: each verification needs its own pre-auth token, and a user has
// only one at a time.
const totpBenchUsers = 64

// benchTOTPUser is an enrolled user and the base32 form of its secret.
type benchTOTPUser struct {
	name, secret string
}

// enrollBenchUsers stores n users with TOTP on, their secrets sealed as
// complete-totp seals them.
func enrollBenchUsers(b *testing.B, a *Authenticator, store Store, n int) []benchTOTPUser {
	b.Helper()
	users := make([]benchTOTPUser, n)
	for i := range users {
		name := fmt.Sprintf("totp-%03d", i)
		secret := bytes.Repeat([]byte{byte(i + 1)}, totpSecretSize)
		sealed, err := a.ring.SealTOTP(a.cfg.Rand, name, secret)
		if err != nil {
			b.Fatal(err)
		}
		u := User{Name: name, PasswordHash: "unused", TOTPSecret: sealed}
		if err := store.CreateUser(context.Background(), u); err != nil {
			b.Fatal(err)
		}
		users[i] = benchTOTPUser{name, base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(secret)}
	}
	return users
}

// pendingVerification is one verify-totp call made ready outside the timer.
type pendingVerification struct {
	user, preAuth, code string
}

// BenchmarkVerifyTOTP measures VerifyTOTP with a fresh pre-auth token and a
// step no code of the user was accepted at. Tokens and codes are made in
// batches with the timer stopped: a token comes from the login path after
// the password check, and the codes from pquerna/otp, not from this
// package.
func BenchmarkVerifyTOTP(b *testing.B) {
	store := NewMemoryStore()
	clock := newStepClock()
	a := benchAuth(b, store, func(c *Config) { c.Now = clock.Now })
	users := enrollBenchUsers(b, a, store, totpBenchUsers)
	benchVerifyTOTP(b, a, clock, users)
}

// benchVerifyTOTP runs b.N verifications of users, whose Authenticator a
// runs on clock.
func benchVerifyTOTP(b *testing.B, a *Authenticator, clock *stepClock, users []benchTOTPUser) {
	ctx := context.Background()
	opts := totp.ValidateOpts{Period: totpPeriod, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}
	prepare := func(n int) []pendingVerification {
		clock.tick()
		batch := make([]pendingVerification, n)
		for i := range batch {
			u := users[i]
			login, err := grantLogin(ctx, a, u.name)
			if err != nil || !login.TOTPRequired {
				b.Fatalf("pre-auth token for %s: %+v, %v", u.name, login, err)
			}
			code, err := totp.GenerateCodeCustom(u.secret, clock.Now(), opts)
			if err != nil {
				b.Fatal(err)
			}
			batch[i] = pendingVerification{u.name, login.PreAuthToken, code}
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

func BenchmarkInitTOTP(b *testing.B) {
	ctx := context.Background()
	store := NewMemoryStore()
	a := benchAuth(b, store, nil)
	if err := store.CreateUser(ctx, User{Name: benchUser, PasswordHash: "unused"}); err != nil {
		b.Fatal(err)
	}
	master := Principal{Kind: KindMaster}
	b.ReportAllocs()
	cpu := startCPU(b)
	for b.Loop() {
		if e, err := a.InitTOTP(ctx, master, benchUser); err != nil || e.QRCode == "" {
			b.Fatalf("InitTOTP: %v", err)
		}
	}
	cpu.report(b)
}

// BenchmarkRawQR is the baseline of init-totp: the QR code of a comparable
// otpauth URL, drawn and encoded as a PNG data URL exactly as InitTOTP does.
func BenchmarkRawQR(b *testing.B) {
	key, err := totp.Generate(totp.GenerateOpts{
		Issuer:      "nmauth",
		AccountName: benchUser,
		Period:      totpPeriod,
		Secret:      bytes.Repeat([]byte{7}, totpSecretSize),
		Digits:      otp.DigitsSix,
		Algorithm:   otp.AlgorithmSHA1,
	})
	if err != nil {
		b.Fatal(err)
	}
	url := key.URL()
	b.ReportAllocs()
	cpu := startCPU(b)
	for b.Loop() {
		if _, err := otpauth.QRDataURL(url); err != nil {
			b.Fatal(err)
		}
	}
	cpu.report(b)
}

// BenchmarkHTTP serves one small handler through httptest.NewRecorder,
// bare and behind Middleware, so that the ratio is what the bearer check
// adds to a route of the application.
func BenchmarkHTTP(b *testing.B) {
	warm, _, creds := benchBearer(b)
	body := []byte(`{"ok":true}`)
	app := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
	cases := []struct {
		name       string
		handler    http.Handler
		credential string
	}{
		{"bare", app, creds.user},
		{"middleware-user", warm.Middleware(app), creds.user},
		{"middleware-master", warm.Middleware(app), creds.master},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/api/whoami", nil)
			req.Header.Set("Authorization", "Bearer "+tc.credential)
			b.ReportAllocs()
			cpu := startCPU(b)
			for b.Loop() {
				rec := httptest.NewRecorder()
				tc.handler.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d", rec.Code)
				}
			}
			cpu.report(b)
		})
	}
}

// grantLogin grants a user's login without checking a password, so that
// a benchmark measures what comes after the hash.
func grantLogin(ctx context.Context, a *Authenticator, name string) (UserLogin, error) {
	var out UserLogin
	err := a.store.UpdateUser(ctx, name, func(u *User) error {
		var err error
		out, err = a.grantUser(u, a.now(), a.cfg.UserTokenTTL)
		return err
	})
	return out, err
}

// BenchmarkLoginHost is a host login on MemoryStore: with a machine secret
// (netclient's 32 base32 characters, kept as a keyed digest), whose clean
// success reads once and writes nothing, against the same host with a
// password a person chose, kept under argon2id, in one run.
func BenchmarkLoginHost(b *testing.B) {
	ctx := WithClientAddr(context.Background(), netip.MustParseAddr("192.0.2.10"))
	for _, c := range []struct{ name, password string }{
		{"machine-secret", "MFRGGZDFMZTWQ2LKNNWG23TPOBYXE43U"},
		{"argon2id", benchPassword},
	} {
		setup := func(b *testing.B) *Authenticator {
			a := benchAuth(b, NewMemoryStore(), func(c *Config) { c.ClientRate = -1 })
			if err := a.Admin().CreateHost(ctx, "bench-host", "", c.password); err != nil {
				b.Fatal(err)
			}
			if _, err := a.LoginHost(ctx, "bench-host", "", c.password); err != nil {
				b.Fatal(err)
			}
			return a
		}
		b.Run(c.name, func(b *testing.B) {
			a := setup(b)
			b.ReportAllocs()
			cpu := startCPU(b)
			for b.Loop() {
				if out, err := a.LoginHost(ctx, "bench-host", "", c.password); err != nil || out.AuthToken == "" {
					b.Fatalf("LoginHost: %+v, %v", out, err)
				}
			}
			cpu.report(b)
		})
		b.Run(c.name+"-parallel", func(b *testing.B) {
			a := setup(b)
			b.ReportAllocs()
			cpu := startCPU(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := a.LoginHost(ctx, "bench-host", "", c.password); err != nil {
						b.Error(err)
						return
					}
				}
			})
			cpu.report(b)
		})
	}
}

// BenchmarkHostLoginHTTP is netclient's host login through [Authenticator.Handler],
// its per-client limit included, on MemoryStore, for a host whose last
// login from the client's address is in the cache of machine credentials:
// the login nmauthd serves most, which reads no Store.
func BenchmarkHostLoginHTTP(b *testing.B) {
	const secret = "MFRGGZDFMZTWQ2LKNNWG23TPOBYXE43U"
	a := benchAuth(b, NewMemoryStore(), func(c *Config) { c.ClientRate = -1; c.OnEvent = func(context.Context, Event) {} })
	ctx := context.Background()
	if err := a.Admin().CreateHost(ctx, "bench-host", "", secret); err != nil {
		b.Fatal(err)
	}
	h := a.Handler()
	body := `{"id":"bench-host","password":"` + secret + `"}`
	login := func() int {
		req := httptest.NewRequest(http.MethodPost, "/api/hosts/adm/authenticate", strings.NewReader(body))
		req.RemoteAddr = "192.0.2.10:40000"
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	for range 2 {
		if code := login(); code != http.StatusOK {
			b.Fatalf("status %d", code)
		}
	}
	b.ReportAllocs()
	cpu := startCPU(b)
	for b.Loop() {
		if code := login(); code != http.StatusOK {
			b.Fatalf("status %d", code)
		}
	}
	cpu.report(b)
}
