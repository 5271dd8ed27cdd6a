package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

const (
	testMasterKey    = "load-test-master-key-0123456789abcdef"
	testUser         = "demo"
	testPassword     = "demo password 1"
	testTOTPPassword = "totp password 1"
)

// fakeResolver answers from a table and fails the test for a name it does
// not know, so that no test sends a DNS query.
type fakeResolver struct {
	t     *testing.T
	names map[string][]string
}

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	addrs, ok := r.names[host]
	if !ok {
		r.t.Errorf("unexpected lookup of %q", host)
		return nil, errors.New("no such host")
	}
	var out []netip.Addr
	for _, a := range addrs {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

func testResolver(t *testing.T) fakeResolver {
	return fakeResolver{t: t, names: map[string][]string{
		"localhost":    {"127.0.0.1", "::1"},
		"example.com":  {"93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"},
		"mixed.test":   {"127.0.0.1", "192.0.2.10"},
		"intranet.lan": {"10.0.0.1"},
		"nothing.test": {},
	}}
}

func testEnv(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// testServer serves an Authenticator over a MemoryStore on loopback, with
// the routes of nmauthd, the user testUser and TOTP users load-0000….
func testServer(t *testing.T, totpUsers int, tweak func(*nmauth.Config)) *httptest.Server {
	t.Helper()
	mk, err := nmauth.NewMasterKey(testMasterKey, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{bytes.Repeat([]byte{3}, 32)}, MasterKey: mk}
	if tweak != nil {
		tweak(&cfg)
	}
	auth, err := nmauth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := auth.Admin().CreateUser(ctx, testUser, testPassword); err != nil {
		t.Fatal(err)
	}
	for i := range totpUsers {
		if err := auth.Admin().CreateUser(ctx, fmt.Sprintf("load-%04d", i), testTOTPPassword); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(newServeMux(auth))
	t.Cleanup(srv.Close)
	return srv
}

func mustParse(t *testing.T, args ...string) *options {
	t.Helper()
	o, err := parseOptions(args, testEnv(map[string]string{
		"NMAUTH_LOAD_PASSWORD":      testPassword,
		"NMAUTH_LOAD_MASTER_KEY":    testMasterKey,
		"NMAUTH_LOAD_TOTP_PASSWORD": testTOTPPassword,
	}), &bytes.Buffer{})
	if err != nil {
		t.Fatalf("parseOptions(%q): %v", args, err)
	}
	return o
}

func testAPI(t *testing.T, o *options) *api {
	t.Helper()
	base, err := checkTarget(context.Background(), o.target, testResolver(t))
	if err != nil {
		t.Fatal(err)
	}
	a := newAPI(base, o.bounds.clients, o.sources, o.timeout)
	t.Cleanup(a.close)
	return a
}

func readUsersFile(t *testing.T, path string) []totpUser {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var users []totpUser
	if err := json.Unmarshal(data, &users); err != nil {
		t.Fatal(err)
	}
	return users
}

func TestScenarios(t *testing.T) {
	const totpUsers = 3
	srv := testServer(t, totpUsers, nil)
	file := filepath.Join(t.TempDir(), "users.json")
	ctx := context.Background()

	setup := mustParse(t, "-target", srv.URL, "-c", "2", "-setup", "-totp-prefix", "load", "-totp-count", "3", "-totp-file", file)
	if err := setupTOTP(ctx, setup, testAPI(t, setup), &bytes.Buffer{}); err != nil {
		t.Fatalf("setup: %v", err)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("users file: %v, %v; want mode 0600", fi.Mode(), err)
	}
	enrolled := readUsersFile(t, file)
	if len(enrolled) != totpUsers || enrolled[2].Name != "load-0002" || enrolled[0].Secret == "" {
		t.Fatalf("users file lists %+v", enrolled)
	}

	const n = 6
	o := mustParse(t, "-target", strings.Replace(srv.URL, "127.0.0.1", "localhost", 1), "-c", "3", "-n", fmt.Sprint(n), "-d", "2m",
		"-user", testUser, "-scenarios", "healthz,whoami,login,verify-totp", "-totp-file", file)
	results, err := runScenarios(ctx, o, testAPI(t, o), &bytes.Buffer{})
	if err != nil {
		t.Fatalf("runScenarios: %v", err)
	}
	want := map[string]int{"healthz": n, "whoami": n, "login": n, "verify-totp": totpUsers}
	if len(results) != len(want) {
		t.Fatalf("%d results, want %d", len(results), len(want))
	}
	for _, r := range results {
		if r.answered() != want[r.name] || r.ok() != want[r.name] || r.transport != 0 {
			t.Errorf("%s: %d answered, %d ok, %d unanswered, errors %s; want %d ok", r.name, r.answered(), r.ok(), r.transport, r.errorSummary(), want[r.name])
		}
		if r.elapsed <= 0 || r.percentile(0.5) <= 0 || r.percentile(0.99) < r.percentile(0.5) {
			t.Errorf("%s: elapsed %s, p50 %s, p99 %s", r.name, r.elapsed, r.percentile(0.5), r.percentile(0.99))
		}
	}
	for i, u := range readUsersFile(t, file) {
		if u.LastStep <= enrolled[i].LastStep {
			t.Errorf("%s: last step %d after verify-totp, %d after setup", u.Name, u.LastStep, enrolled[i].LastStep)
		}
	}

	var out bytes.Buffer
	printResults(&out, results, false)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1+len(results) || !strings.Contains(lines[0], "vs healthz") {
		t.Fatalf("output:\n%s", out.String())
	}
	for i, r := range results {
		f := strings.Fields(lines[i+1])
		if f[0] != r.name || f[1] != fmt.Sprint(want[r.name]) {
			t.Errorf("line %q: want %s with %d requests", lines[i+1], r.name, want[r.name])
		}
	}
	if f := strings.Fields(lines[1]); f[6] != "1.000" {
		t.Errorf("healthz line %q: ratio %s, want 1.000", lines[1], f[6])
	}
}

func TestRounds(t *testing.T) {
	srv := testServer(t, 0, nil)
	const rounds, n = 3, 4
	var out bytes.Buffer
	err := run(context.Background(), []string{"-target", srv.URL, "-user", testUser, "-c", "2", "-n", fmt.Sprint(n),
		"-rounds", fmt.Sprint(rounds), "-pid", fmt.Sprint(os.Getpid()), "-scenarios", "healthz,whoami"},
		testEnv(map[string]string{"NMAUTH_LOAD_PASSWORD": testPassword}), &out, testResolver(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), "running healthz"); got != rounds {
		t.Errorf("healthz ran %d times, want %d:\n%s", got, rounds, out.String())
	}
	table := out.String()[strings.Index(out.String(), "scenario "):]
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "srv-cpu/req") || !strings.Contains(lines[0], "tool-cpu/req") {
		t.Fatalf("table:\n%s", table)
	}
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if f[1] != fmt.Sprint(rounds*n) || f[len(f)-1] != "-" {
			t.Errorf("line %q: want %d requests over the rounds and no error", line, rounds*n)
		}
		for _, cpu := range f[len(f)-3 : len(f)-1] {
			if _, err := time.ParseDuration(strings.Replace(cpu, "µs", "us", 1)); err != nil {
				t.Errorf("line %q: CPU column %q: %v", line, cpu, err)
			}
		}
	}
}

func TestSources(t *testing.T) {
	mk, err := nmauth.NewMasterKey(testMasterKey, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{bytes.Repeat([]byte{3}, 32)}, MasterKey: mk})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	mux := newServeMux(auth)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		mu.Lock()
		seen[host]++
		mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	defer srv.Close()
	const sources, perSource = 4, 3
	err = run(context.Background(), []string{"-target", srv.URL, "-c", "2", "-n", fmt.Sprint(sources * perSource),
		"-sources", fmt.Sprint(sources), "-scenarios", "healthz"}, testEnv(nil), &bytes.Buffer{}, testResolver(t))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"127.0.0.1": perSource, "127.0.0.2": perSource, "127.0.0.3": perSource, "127.0.0.4": perSource}
	if !maps.Equal(seen, want) {
		t.Errorf("requests by source address: %v, want %v", seen, want)
	}
	err = run(context.Background(), []string{"-target", "http://[::1]:8081", "-n", "1", "-sources", "2", "-scenarios", "healthz"},
		testEnv(nil), &bytes.Buffer{}, testResolver(t))
	if err == nil || !strings.Contains(err.Error(), "-sources") {
		t.Errorf("-sources with an IPv6 target: %v, want it refused", err)
	}
}

func TestParseProcStat(t *testing.T) {
	// The command name may hold spaces and parentheses.
	const stat = "4242 (nm auth) d) S 1 4242 4242 0 -1 4194560 5000 0 0 0 250 75 0 0 20 0 9 0 100 2000000000 20000 18446744073709551615"
	got, err := parseProcStat(stat)
	if want := 3250 * time.Millisecond; err != nil || got != want {
		t.Errorf("parseProcStat = %s, %v; want %s", got, err, want)
	}
	for _, bad := range []string{"", "4242 nmauthd S 1", "4242 (x) S 1 2 3", "4242 (x) S 1 4242 4242 0 -1 4194560 5000 0 0 0 x 75 0"} {
		if _, err := parseProcStat(bad); err == nil {
			t.Errorf("parseProcStat(%q) accepted it", bad)
		}
	}
}

func TestRunRefusesNonLoopbackTargets(t *testing.T) {
	for _, target := range []string{
		"http://10.0.0.1:8081",
		"http://192.168.1.1:8081",
		"http://93.184.215.14",
		"http://[2001:db8::1]:8081",
		"http://[::ffff:10.0.0.1]:8081",
		"http://0.0.0.0:8081",
		"http://example.com",
		"http://example.com:8081/api",
		"http://intranet.lan:8081",
		"http://mixed.test:8081",
		"http://nothing.test:8081",
		"ftp://127.0.0.1:8081",
		"http://:8081",
		"127.0.0.1:8081",
	} {
		t.Run(target, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), []string{"-target", target, "-user", testUser, "-n", "1"},
				testEnv(map[string]string{"NMAUTH_LOAD_PASSWORD": testPassword}), &out, testResolver(t))
			if err == nil {
				t.Fatalf("run accepted %s", target)
			}
			if out.Len() != 0 {
				t.Errorf("run printed %q before refusing", out.String())
			}
		})
	}
}

func TestCheckTargetAcceptsLoopback(t *testing.T) {
	for _, target := range []string{
		"http://127.0.0.1:8081",
		"http://127.0.0.2:8081/",
		"http://localhost:8081",
		"http://[::1]:8081",
		"https://localhost",
	} {
		if _, err := checkTarget(context.Background(), target, testResolver(t)); err != nil {
			t.Errorf("checkTarget(%s): %v", target, err)
		}
	}
}

func TestLoopbackOnlyDial(t *testing.T) {
	for _, tc := range []struct {
		address string
		ok      bool
	}{
		{"127.0.0.1:8081", true},
		{"127.1.2.3:80", true},
		{"[::1]:8081", true},
		{"[::ffff:127.0.0.1]:8081", true},
		{"10.0.0.1:8081", false},
		{"[::ffff:10.0.0.1]:8081", false},
		{"93.184.215.14:80", false},
		{"[2001:db8::1]:80", false},
		{"localhost:80", false}, // a name never reaches the dialer's check unresolved
	} {
		err := loopbackOnly("tcp", tc.address, nil)
		if (err == nil) != tc.ok {
			t.Errorf("loopbackOnly(%s) = %v, want ok %v", tc.address, err, tc.ok)
		}
	}
}

func TestConcurrentLogins(t *testing.T) {
	// One hash at a time and one waiting: the rest of the burst must be
	// answered 503 at once, with Retry-After.
	srv := testServer(t, 0, func(c *nmauth.Config) {
		c.PasswordHashConcurrency, c.PasswordHashQueue = 1, 1
	})
	const n = 12
	o := mustParse(t, "-target", srv.URL, "-user", testUser, "-concurrent-logins", fmt.Sprint(n), "-pid", fmt.Sprint(os.Getpid()))
	br, err := burstLogins(context.Background(), o, testAPI(t, o))
	if err != nil {
		t.Fatal(err)
	}
	ok, busy, throttled := br.statuses[200], br.statuses[503], br.statuses[429]
	if ok+busy+throttled != n || br.transport != 0 {
		t.Errorf("answers %v, %d unanswered; want %d answers of 200, 429 or 503", br.statuses, br.transport, n)
	}
	if ok < 1 || busy < 1 {
		t.Errorf("%d logins succeeded and %d were turned away; want at least one of each", ok, busy)
	}
	if br.noRetryAfter != 0 {
		t.Errorf("%d answers of 429 or 503 had no Retry-After", br.noRetryAfter)
	}
	if br.slowest != br.latencies[len(br.latencies)-1] || br.slowest < br.percentile(0.5) {
		t.Errorf("slowest %s, p50 %s", br.slowest, br.percentile(0.5))
	}
	if br.memoryAfter.peakKiB <= 0 || br.memoryAfter.peakKiB < br.memoryBefore.peakKiB {
		t.Errorf("peak resident memory %d KiB before, %d KiB after", br.memoryBefore.peakKiB, br.memoryAfter.peakKiB)
	}
	var out bytes.Buffer
	printBurst(&out, o, br)
	if want := fmt.Sprintf("200×%d 429×%d 503×%d", ok, throttled, busy); !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
}

func TestParseProcStatus(t *testing.T) {
	const status = "Name:\tnmauthd\nVmPeak:\t 1300000 kB\nVmHWM:\t   81234 kB\nVmRSS:\t   40960 kB\nThreads:\t8\n"
	m, err := parseProcStatus(strings.NewReader(status))
	if err != nil || m.peakKiB != 81234 || m.currentKiB != 40960 {
		t.Errorf("parseProcStatus = %+v, %v; want VmHWM 81234, VmRSS 40960", m, err)
	}
	for _, bad := range []string{"Name:\tx\n", "VmHWM:\t12 MB\nVmRSS:\t1 kB\n", "VmHWM:\tx kB\nVmRSS:\t1 kB\n"} {
		if _, err := parseProcStatus(strings.NewReader(bad)); err == nil {
			t.Errorf("parseProcStatus(%q) accepted it", bad)
		}
	}
}

func TestParseOptionsRefuses(t *testing.T) {
	for _, args := range [][]string{
		{"-c", "0"},
		{"-d", "0"},
		{"-d", "-1s"},
		{"-n", "-1"},
		{"-scenarios", "healthz,nap"},
		{"-scenarios", ","},
		{"-concurrent-logins", "-5"},
		{"-rounds", "0"},
		{"-pid", "-1"},
		{"-sources", "0"},
		{"-sources", "70000"},
		{"extra"},
	} {
		if _, err := parseOptions(args, testEnv(nil), &bytes.Buffer{}); err == nil {
			t.Errorf("parseOptions(%q) accepted it", args)
		}
	}
}

func TestWaitForFreshStep(t *testing.T) {
	now := currentStep()
	if err := waitForFreshStep(context.Background(), []totpUser{{LastStep: now - 1}}, &bytes.Buffer{}); err != nil {
		t.Errorf("a step already past: %v", err)
	}
	// A step beyond the next has been used: any code it could send now
	// would be a replay, so it must wait.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	var log bytes.Buffer
	if err := waitForFreshStep(ctx, []totpUser{{LastStep: now - 1}, {LastStep: now + 2}}, &log); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the next step used: %v, want it to wait until the context ends", err)
	}
	if !strings.Contains(log.String(), "waiting") {
		t.Errorf("no word of the wait: %q", log.String())
	}
}

// TestFleet runs the fleet scenario over a few hosts made by seedFleet:
// every answer is a 200, each host logs in before its first whoami, and a
// host logs in again only once -fleet-relogin has passed.
func TestFleet(t *testing.T) {
	ctx := context.Background()
	store := nmauth.NewMemoryStore()
	auth, err := nmauth.New(nmauth.Config{Store: store, Secrets: [][]byte{bytes.Repeat([]byte{4}, 32)}, ClientRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	const hosts, n = 5, 40
	seed := mustParse(t, "-fleet-hosts", fmt.Sprint(hosts), "-fleet-password", "fleet-password-1")
	if err := seedFleet(ctx, seed, auth, store, &bytes.Buffer{}); err != nil {
		t.Fatalf("seedFleet: %v", err)
	}
	srv := httptest.NewServer(newServeMux(auth))
	t.Cleanup(srv.Close)

	for _, tc := range []struct {
		relogin            string
		minLogins, maxLogs int
	}{
		{"1h", hosts, n - 1}, // each host once, or again while its first login is on its way
		{"1ns", n, n},        // every turn is a login
	} {
		o := mustParse(t, "-target", srv.URL, "-c", "2", "-n", fmt.Sprint(n), "-d", "2m", "-scenarios", "fleet",
			"-fleet-hosts", fmt.Sprint(hosts), "-fleet-password", "fleet-password-1", "-fleet-relogin", tc.relogin)
		var log bytes.Buffer
		results, err := runScenarios(ctx, o, testAPI(t, o), &log)
		if err != nil {
			t.Fatalf("relogin %s: %v", tc.relogin, err)
		}
		r := results[0]
		if r.answered() != n || r.ok() != n {
			t.Errorf("relogin %s: %d answered, %d ok, errors %s; want %d ok", tc.relogin, r.answered(), r.ok(), r.errorSummary(), n)
		}
		var gotHosts, logins, whoamis int
		if _, err := fmt.Sscanf(lastLine(log.String()), "fleet: %d hosts, %d logins, %d whoami", &gotHosts, &logins, &whoamis); err != nil {
			t.Fatalf("relogin %s: summary %q: %v", tc.relogin, log.String(), err)
		}
		if gotHosts != hosts || logins+whoamis != n || logins < tc.minLogins || logins > tc.maxLogs {
			t.Errorf("relogin %s: %d hosts, %d logins, %d whoami; want %d hosts and %d to %d logins of %d", tc.relogin, gotHosts, logins, whoamis, hosts, tc.minLogins, tc.maxLogs, n)
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestRate: -rate paces the requests of all clients together, so n
// requests at r a second take at least (n-1)/r, however many clients.
func TestRate(t *testing.T) {
	srv := testServer(t, 0, nil)
	const n, rate = 21, 200.0
	var out bytes.Buffer
	start := time.Now()
	err := run(context.Background(), []string{"-target", srv.URL, "-user", testUser, "-c", "4", "-n", fmt.Sprint(n),
		"-rate", fmt.Sprint(rate), "-scenarios", "healthz"},
		testEnv(map[string]string{"NMAUTH_LOAD_PASSWORD": testPassword}), &out, testResolver(t))
	if err != nil {
		t.Fatal(err)
	}
	if elapsed, least := time.Since(start), time.Duration((n-1)/rate*float64(time.Second)); elapsed < least {
		t.Errorf("%d requests at %v a second took %v, less than %v", n, rate, elapsed, least)
	}
	table := out.String()[strings.Index(out.String(), "scenario "):]
	if f := strings.Fields(strings.Split(strings.TrimSpace(table), "\n")[1]); f[0] != "healthz" || f[1] != fmt.Sprint(n) {
		t.Errorf("table does not show %d healthz requests:\n%s", n, table)
	}
}

// TestFloodScenario floods a server with wrong passwords from 40
// addresses while the user logs in rightly from its own: the scenario
// reports the user's right logins, which all get in, how many within 5 s,
// and what the flood got, some of it turned away.
func TestFloodScenario(t *testing.T) {
	srv := testServer(t, 0, func(c *nmauth.Config) {
		c.PasswordHashConcurrency, c.PasswordHashQueue = 1, 4
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil)) // the flood's refusals are many
	})
	o := mustParse(t, "-target", srv.URL, "-user", testUser, "-scenarios", "flood", "-c", "40", "-sources", "40", "-d", "1s")
	var log bytes.Buffer
	results, err := runScenarios(context.Background(), o, testAPI(t, o), &log)
	if err != nil {
		t.Fatal(err)
	}
	r := results[0]
	if r.answered() < 1 || r.ok() != r.answered() || r.transport != 0 {
		t.Errorf("the user's right logins: %d answered, %d ok, errors %s; want every one 200\n%s", r.answered(), r.ok(), r.errorSummary(), log.String())
	}
	var clients, sources, sent, wrong, throttled, busy, lost int
	if _, err := fmt.Sscanf(strings.Split(log.String(), "\n")[0], "flood: %d clients from %d addresses sent %d wrong passwords: 401×%d 429×%d 503×%d no-answer×%d",
		&clients, &sources, &sent, &wrong, &throttled, &busy, &lost); err != nil {
		t.Fatalf("summary %q: %v", log.String(), err)
	}
	if clients != 40 || sources != 40 || wrong+throttled+busy != sent-lost || busy+throttled < 1 {
		t.Errorf("flood summary %q: want 40 clients from 40 addresses, every wrong password answered 401, 429 or 503, some turned away", log.String())
	}
	inTime := 0
	for _, l := range r.latencies {
		if l <= rightLoginBound {
			inTime++
		}
	}
	want := fmt.Sprintf("%d of %d answered 200 within 5s", inTime, r.answered())
	if !strings.Contains(log.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, log.String())
	}
}

// TestBurstScenario: 30 hosts with machine secrets log in at one moment
// and then back to back; every answer is 200, and the line reports them.
func TestBurstScenario(t *testing.T) {
	ctx := context.Background()
	store := nmauth.NewMemoryStore()
	auth, err := nmauth.New(nmauth.Config{Store: store, Secrets: [][]byte{bytes.Repeat([]byte{4}, 32)}})
	if err != nil {
		t.Fatal(err)
	}
	const hosts = 30
	secret := "K7QM2XDRT5VBNW3HJ6YPLC4GFZ2SAE7U" // netclient's form: a machine secret
	seed := mustParse(t, "-fleet-hosts", fmt.Sprint(hosts), "-fleet-password", secret)
	if err := seedFleet(ctx, seed, auth, store, &bytes.Buffer{}); err != nil {
		t.Fatalf("seedFleet: %v", err)
	}
	// An argon2id hash, seconds a login under the race detector, would
	// keep hosts at the login gate past its queue timeout.
	if h, err := store.GetHost(ctx, fleetHostID("fleet", 0)); err != nil || strings.HasPrefix(h.PasswordHash, "$argon2id$") {
		t.Fatalf("the hosts' password is not kept as a machine secret (%v): the test needs one", err)
	}
	srv := httptest.NewServer(newServeMux(auth))
	t.Cleanup(srv.Close)
	o := mustParse(t, "-target", srv.URL, "-scenarios", "burst", "-fleet-hosts", fmt.Sprint(hosts), "-fleet-password", secret,
		"-d", "300ms", "-pid", fmt.Sprint(os.Getpid()))
	var log bytes.Buffer
	results, err := runScenarios(ctx, o, testAPI(t, o), &log)
	if err != nil {
		t.Fatal(err)
	}
	r := results[0]
	if r.answered() < hosts || r.ok() != r.answered() || r.transport != 0 {
		t.Errorf("%d answered, %d ok, errors %s; want at least one 200 per host and nothing else\n%s", r.answered(), r.ok(), r.errorSummary(), log.String())
	}
	want := fmt.Sprintf("burst: %d hosts at one moment, then back to back for 300ms: %d answers, 200×%d, errors ", hosts, r.answered(), r.answered())
	if !strings.Contains(log.String(), want) || !strings.Contains(log.String(), "peak resident (VmHWM)") {
		t.Errorf("output lacks %q and the peak resident memory:\n%s", want, log.String())
	}
}

// TestBurstHostsOnTheirOwnConnections: every host of a burst logs in from
// its own address; a connection the server closes without an answer is
// counted and reported, never hidden, and its host dials again.
func TestBurstHostsOnTheirOwnConnections(t *testing.T) {
	const hosts = 300
	var (
		mu       sync.Mutex
		seen     = map[string]bool{}
		wrongSrc []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body hostAuthRequest
		if r.URL.Path != "/api/hosts/adm/authenticate" || json.NewDecoder(r.Body).Decode(&body) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var i int
		fmt.Sscanf(body.ID, "fleet-%d", &i)
		src, _, _ := net.SplitHostPort(r.RemoteAddr)
		mu.Lock()
		first := !seen[body.ID]
		seen[body.ID] = true
		if want := sourceAddr(i, hosts).(*net.TCPAddr).IP.String(); src != want {
			wrongSrc = append(wrongSrc, fmt.Sprintf("%s from %s, want %s", body.ID, src, want))
		}
		mu.Unlock()
		if first {
			// The host's first request: the connection ends unanswered.
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"Code":200,"Message":"ok","Response":{}}`)
	}))
	t.Cleanup(srv.Close)
	o := mustParse(t, "-target", srv.URL, "-scenarios", "burst", "-fleet-hosts", fmt.Sprint(hosts), "-fleet-password", "pw",
		"-d", "1s")
	d := &burstDialer{base: testAPI(t, o).base, n: hosts}
	var log bytes.Buffer
	r, err := runHostBurst(context.Background(), o, d, &log)
	if err != nil {
		t.Fatal(err)
	}
	if len(wrongSrc) > 0 {
		t.Errorf("%d logins from another host's address, as %s", len(wrongSrc), wrongSrc[0])
	}
	if len(seen) != hosts {
		t.Errorf("%d of %d hosts logged in", len(seen), hosts)
	}
	if r.transport != hosts || r.firstErr == nil {
		t.Errorf("%d requests without an answer (first error %v), want %d: one per host", r.transport, r.firstErr, hosts)
	}
	// A host whose first connection closes after -d has passed logs in no
	// more, so not every host need have a second answer.
	if r.answered() == 0 || r.statuses[http.StatusOK] != r.answered() {
		t.Errorf("answers %v; want 200s from hosts that dialed again", r.statuses)
	}
	if want := fmt.Sprintf("200×%d, errors no-answer×%d;", r.answered(), hosts); !strings.Contains(log.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, log.String())
	}
}

// TestGroupsScenario: 20 IPv4 /24s, named through the trusted proxy,
// flood made-up names at a server with one hashing slot and four places
// while the user logs in from a new address each time; the user's logins
// are the result, and the lines report the flood's answers and how many
// of the user's answered 200 within 5 s.
func TestGroupsScenario(t *testing.T) {
	srv := testServer(t, 0, func(c *nmauth.Config) {
		c.PasswordHashConcurrency, c.PasswordHashQueue = 1, 4
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil)) // the flood's refusals are many
	})
	o := mustParse(t, "-target", srv.URL, "-user", testUser, "-scenarios", "groups", "-c", "24",
		"-groups", "20", "-groups-every", "100ms", "-d", "1s")
	var log bytes.Buffer
	results, err := runScenarios(context.Background(), o, testAPI(t, o), &log)
	if err != nil {
		t.Fatal(err)
	}
	r := results[0]
	if r.answered() < 1 || r.transport != 0 {
		t.Errorf("the user's right logins: %d answered, errors %s; want some, all answered\n%s", r.answered(), r.errorSummary(), log.String())
	}
	var groups, ok, wrong, throttled, busy, lost int
	if _, err := fmt.Sscanf(strings.Split(log.String(), "\n")[0], "groups: made-up from %d IPv4 /24s: 200×%d 401×%d 429×%d 503×%d no-answer×%d",
		&groups, &ok, &wrong, &throttled, &busy, &lost); err != nil {
		t.Fatalf("summary %q: %v", log.String(), err)
	}
	if groups != 20 || ok != 0 || wrong < 1 || busy+throttled < 1 {
		t.Errorf("flood summary %q: want 20 groups, no made-up name let in, some answered 401 and some turned away", log.String())
	}
	var inTime, all int
	line := strings.Split(log.String(), "\n")[1]
	if _, err := fmt.Sscanf(line, "groups: user "+testUser+"'s right logins from a new address: %d of %d answered 200 within 5s", &inTime, &all); err != nil ||
		all != r.answered() || inTime > r.ok() {
		t.Errorf("the user's line %q (%v): want its %d logins, at most its %d answered 200", line, err, r.answered(), r.ok())
	}
}
