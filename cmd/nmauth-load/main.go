// Command nmauth-load drives a running nmauth server (nmauthd) over
// loopback with concurrent keep-alive clients and prints, per scenario,
// requests per second, p50 and p99 latency, errors by status and the ratio
// to the healthz baseline of the same run:
//
//	go run ./cmd/nmauth-load -target http://127.0.0.1:8081 -c 16 -d 10s \
//	    -scenarios healthz,whoami,login,verify-totp
//
// It refuses any target that is not a loopback address, and every
// connection it opens is checked again when it dials.
//
// Scenarios:
//
//	healthz      GET /healthz, the baseline
//	whoami       GET /api/whoami with the user token of one login of -user
//	login        POST /api/users/adm/authenticate as -user
//	verify-totp  POST /api/users/{name}/auth/verify-totp, one per TOTP user
//	fleet        -fleet-hosts hosts PREFIX-0000000…, taken in turn: a host
//	             logs in when it has no token or -fleet-relogin has passed
//	             since its last login, and calls GET /api/whoami otherwise
//	flood        -c clients send wrong passwords from -sources addresses,
//	             for made-up names and -user in turn, as fast as answered,
//	             for -d, while -user logs in rightly from an address of
//	             its own where it logged in before: how many of its right
//	             logins answer 200 within 5 s
//	groups       -groups client groups (IPv4 /24s, or with -groups-ipv6
//	             IPv6 /56s of one /48), one address and one request in
//	             flight each, named in X-Forwarded-For to a server that
//	             trusts 127.0.0.1 as its proxy, send -groups-flood (made-up
//	             names, one account's right logins, or wrong passwords of
//	             the account below) for -d, while -user (or with
//	             -groups-login host the first fleet host) logs in every
//	             -groups-every from a new address or its known one
//	             (-groups-device): how many of its logins answer 200
//	             within 5 s
//	burst        -fleet-hosts hosts, each on a connection from an address
//	             of its own, log in at one moment and then back to back
//	             for -d: every answer's status, p99, the slowest answer
//	             and, with -pid, the server's peak resident memory; a
//	             host writes its request as soon as its connection is
//	             open
//
// The fleet scenario's hosts share one password. -serve creates them with
// -fleet-hosts; for nmauthd, import them with `nmauthd host import`, one
// "ID PASSWORD" line each. A password that qualifies as a machine secret,
// as netclient's 32 base32 characters do, costs the server microseconds a
// login; any other an argon2id hash. With -pid the fleet scenario also
// reports the server's resident memory.
//
// Each verification needs a fresh pre-auth token and a step the user has
// not used, so verify-totp needs many users with TOTP on. nmauthd has no
// route that creates users: create them with `nmauthd user add`, then let
// -setup enroll them over HTTP with the master key and write the users
// file that verify-totp reads:
//
//	for i in $(seq -f %04g 0 199); do echo "$PW" | nmauthd user add --db DB load-$i; done
//	NMAUTH_LOAD_MASTER_KEY=… NMAUTH_LOAD_TOTP_PASSWORD="$PW" go run ./cmd/nmauth-load \
//	    -setup -totp-prefix load -totp-count 200 -totp-file users.json
//	go run ./cmd/nmauth-load -scenarios verify-totp -totp-file users.json
//
// -rounds R runs the whole list R times, taking turns, so that other load
// on the machine falls on every scenario alike; -pid adds the server's CPU
// time per request, read from /proc/PID/stat, and the tool's own beside
// it: on one machine the two share the cores, and a rate is bound by the
// sum of both.
//
// A server that limits attempts per client address (nmauth's
// Config.ClientRate) answers 429 to a load of logins from one address;
// -sources N spreads the requests over N source addresses from 127.0.0.1
// up, as N clients would come, so that logins measure the hash again.
//
// -concurrent-logins N sends N logins at one moment and reports the slowest
// answer, the count of 200, 429 and 503 answers and, with -pid, the
// server's peak resident memory (VmHWM in /proc/PID/status).
//
// -serve ADDR serves the library itself over a MemoryStore with nmauthd's
// routes, for the memory-store figures; run it in another process.
//
// Secrets are best passed in the environment: NMAUTH_LOAD_PASSWORD,
// NMAUTH_LOAD_MASTER_KEY (or MASTER_KEY), NMAUTH_LOAD_TOTP_PASSWORD and
// NMAUTH_LOAD_TOTP_SECRET.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, net.DefaultResolver); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "nmauth-load:", err)
		}
		os.Exit(1)
	}
}

// options are the parsed flags.
type options struct {
	target    string
	scenarios []string
	bounds    bounds
	rounds    int
	sources   int
	timeout   time.Duration

	user, password string
	masterKey      string

	setup                  bool
	totpUser, totpPassword string
	totpSecret             string
	totpPrefix             string
	totpCount              int
	totpFile               string

	concurrentLogins int
	pid              int

	fleetHosts    int
	fleetPrefix   string
	fleetPassword string
	fleetRelogin  time.Duration

	groups groupsOptions

	serve string
}

func parseOptions(args []string, getenv func(string) string, out io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("nmauth-load", flag.ContinueOnError)
	fs.SetOutput(out)
	var scenarios string
	fs.StringVar(&o.target, "target", "http://127.0.0.1:8081", "base URL of the server; must be loopback")
	fs.StringVar(&scenarios, "scenarios", "healthz,whoami", "comma-separated: healthz, whoami, login, verify-totp, fleet, flood, burst, groups")
	fs.IntVar(&o.bounds.clients, "c", 16, "concurrent keep-alive clients")
	fs.DurationVar(&o.bounds.d, "d", 10*time.Second, "time bound per scenario (0: none)")
	fs.IntVar(&o.bounds.n, "n", 0, "request bound per scenario (0: none)")
	fs.Float64Var(&o.bounds.rate, "rate", 0, "requests per second of all clients together, each timed from when it was due (0: as fast as they go)")
	fs.IntVar(&o.rounds, "rounds", 1, "run the scenario list this many times, taking turns, and sum each scenario's rounds")
	fs.IntVar(&o.sources, "sources", 1, "spread requests over this many source addresses, 127.0.0.1 up, as so many clients")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "time limit of one request")
	fs.StringVar(&o.user, "user", getenv("NMAUTH_LOAD_USER"), "user without TOTP for whoami, login and -concurrent-logins (env NMAUTH_LOAD_USER)")
	fs.StringVar(&o.password, "password", getenv("NMAUTH_LOAD_PASSWORD"), "password of -user (env NMAUTH_LOAD_PASSWORD)")
	fs.StringVar(&o.masterKey, "master-key", firstSet(getenv("NMAUTH_LOAD_MASTER_KEY"), getenv("MASTER_KEY")), "master key, for -setup (env NMAUTH_LOAD_MASTER_KEY or MASTER_KEY)")
	fs.BoolVar(&o.setup, "setup", false, "enroll the TOTP users over HTTP with the master key and write -totp-file")
	fs.StringVar(&o.totpUser, "totp-user", "", "one user with TOTP on, for verify-totp or -setup")
	fs.StringVar(&o.totpPassword, "totp-password", getenv("NMAUTH_LOAD_TOTP_PASSWORD"), "password of the TOTP users (env NMAUTH_LOAD_TOTP_PASSWORD)")
	fs.StringVar(&o.totpSecret, "totp-secret", getenv("NMAUTH_LOAD_TOTP_SECRET"), "base32 TOTP secret of -totp-user (env NMAUTH_LOAD_TOTP_SECRET)")
	fs.StringVar(&o.totpPrefix, "totp-prefix", "", "TOTP users are PREFIX-0000, PREFIX-0001, …")
	fs.IntVar(&o.totpCount, "totp-count", 0, "how many -totp-prefix users")
	fs.StringVar(&o.totpFile, "totp-file", "", "users file written by -setup and read by verify-totp")
	fs.IntVar(&o.concurrentLogins, "concurrent-logins", 0, "send this many logins at once and report the slowest answer")
	fs.IntVar(&o.pid, "pid", 0, "server process on this machine: its CPU time per request beside this tool's, and its peak resident memory with -concurrent-logins")
	fs.IntVar(&o.fleetHosts, "fleet-hosts", 0, "hosts of the fleet scenario (with -serve: hosts to create)")
	fs.StringVar(&o.fleetPrefix, "fleet-prefix", "fleet", "fleet hosts are PREFIX-0000000, PREFIX-0000001, …")
	fs.StringVar(&o.fleetPassword, "fleet-password", getenv("NMAUTH_LOAD_FLEET_PASSWORD"), "password of every fleet host (env NMAUTH_LOAD_FLEET_PASSWORD)")
	fs.DurationVar(&o.fleetRelogin, "fleet-relogin", 15*time.Minute, "a fleet host logs in again this long after its last login: its token's lifetime")
	fs.IntVar(&o.groups.groups, "groups", 100, "groups: how many client groups flood, one address and one request in flight each")
	fs.BoolVar(&o.groups.ipv6, "groups-ipv6", false, "groups: the groups are IPv6 /56s of one /48, not IPv4 /24s")
	fs.StringVar(&o.groups.flood, "groups-flood", "made-up", "groups: what they send: made-up (names, wrong passwords), account (right logins of -flood-user or the second fleet host), own (wrong passwords of the account that logs in)")
	fs.StringVar(&o.groups.device, "groups-device", "new", "groups: the account logs in from a new address each time (new) or from the one it logged in from before (known)")
	fs.StringVar(&o.groups.login, "groups-login", "user", "groups: the account is -user (user) or the first fleet host (host)")
	fs.DurationVar(&o.groups.every, "groups-every", 1200*time.Millisecond, "groups: time from one of the account's logins to the next")
	fs.StringVar(&o.groups.floodUser, "flood-user", getenv("NMAUTH_LOAD_FLOOD_USER"), "groups: the user whose right logins flood (with -serve: created) (env NMAUTH_LOAD_FLOOD_USER)")
	fs.StringVar(&o.groups.floodPassword, "flood-password", getenv("NMAUTH_LOAD_FLOOD_PASSWORD"), "password of -flood-user (env NMAUTH_LOAD_FLOOD_PASSWORD)")
	fs.StringVar(&o.serve, "serve", "", "serve the library over a MemoryStore at this loopback address")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if o.scenarios, err = parseScenarios(scenarios); err != nil {
		return nil, err
	}
	switch {
	case o.bounds.clients < 1 || o.bounds.clients > 10000:
		return nil, errors.New("-c must be 1 to 10000")
	case o.bounds.rate < 0:
		return nil, errors.New("-rate must not be negative")
	case o.bounds.d < 0 || o.bounds.n < 0:
		return nil, errors.New("-d and -n must not be negative")
	case o.bounds.d == 0 && o.bounds.n == 0:
		return nil, errors.New("give a bound: -d, -n or both")
	case o.rounds < 1 || o.rounds > 1000:
		return nil, errors.New("-rounds must be 1 to 1000")
	case o.sources < 1 || o.sources > maxSources:
		return nil, fmt.Errorf("-sources must be 1 to %d", maxSources)
	case o.pid < 0:
		return nil, errors.New("-pid must not be negative")
	case o.concurrentLogins < 0 || o.concurrentLogins > 10000:
		return nil, errors.New("-concurrent-logins must be 0 to 10000")
	case o.totpCount < 0:
		return nil, errors.New("-totp-count must not be negative")
	case o.fleetHosts < 0 || o.fleetHosts > 10_000_000:
		return nil, errors.New("-fleet-hosts must be 0 to 10000000")
	case o.fleetRelogin <= 0:
		return nil, errors.New("-fleet-relogin must be positive")
	}
	return o, nil
}

func firstSet(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// run parses args and does what they ask: serve, set up, burst, or run
// the scenarios. r resolves the target's host name.
func run(ctx context.Context, args []string, getenv func(string) string, out io.Writer, r resolver) error {
	o, err := parseOptions(args, getenv, out)
	if err != nil {
		return err
	}
	if o.serve != "" {
		return serveMemory(ctx, o, out)
	}
	base, err := checkTarget(ctx, o.target, r)
	if err != nil {
		return err
	}
	if o.sources > 1 && !isIPv4Loopback(ctx, base.Hostname(), r) {
		return fmt.Errorf("-sources needs a target with an IPv4 loopback address, such as 127.0.0.1")
	}
	a := newAPI(base, o.bounds.clients, o.sources, o.timeout)
	defer a.close()
	switch {
	case o.setup:
		return setupTOTP(ctx, o, a, out)
	case o.concurrentLogins > 0:
		br, err := burstLogins(ctx, o, a)
		if err != nil {
			return err
		}
		printBurst(out, o, br)
		return nil
	}
	results, err := runScenarios(ctx, o, a, out)
	if len(results) > 0 {
		fmt.Fprintf(out, "\ntarget %s, %d clients\n", base, o.bounds.clients)
		printResults(out, results, o.pid > 0)
	}
	return err
}
