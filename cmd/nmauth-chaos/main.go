// Command nmauth-chaos runs three nmauthd replicas on one PostgreSQL
// cluster under a mixed load and injects faults on a schedule drawn from a
// seed: a replica killed with SIGKILL and started again, PostgreSQL
// restarted, paused with SIGSTOP past the store deadline, and its
// connections dropped. It records every request and checks, from the
// outside, the guarantees nmauth makes (see RELIABILITY.md), printing a
// report and exiting 1 on any violation.
//
// The cluster must be one the harness may stop and pause, never a shared
// one; it needs root, for pg_ctlcluster and to signal the cluster's
// processes:
//
//	dsn=$(NMAUTH_PG_CLUSTER=nmauthchaos NMAUTH_PG_PORT=5441 bash .ci/postgres)
//	go run ./cmd/nmauth-chaos -dsn "$dsn" -cluster 15/nmauthchaos -seed 1
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
)

// config is one run of the harness.
type config struct {
	DSN     string // the database of the cluster
	Cluster string // "15/nmauthchaos"
	Seed    uint64
	// Duration, when set, repeats faults until it has passed; otherwise
	// each kind of fault is injected once.
	Duration time.Duration
	Nmauthd  string // the nmauthd binary
	Dir      string // a directory for the replicas' files
	Log      func(format string, args ...any)
}

const (
	masterKey    = "chaos-master-key-0123456789abcdef-0123"
	targetPrefix = "target-"
	workers      = 6
)

func main() {
	var cfg config
	flag.StringVar(&cfg.DSN, "dsn", "", "postgres:// URL of the database the replicas share")
	flag.StringVar(&cfg.Cluster, "cluster", "15/nmauthchaos", "VERSION/NAME of its cluster, which the harness restarts and pauses")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "seed of the fault schedule and the load")
	flag.DurationVar(&cfg.Duration, "d", 0, "run this long, faults repeated; 0 injects each kind of fault once")
	flag.StringVar(&cfg.Nmauthd, "nmauthd", "", "nmauthd binary (default: built from this tree)")
	flag.Parse()
	cfg.Log = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	if err := mainErr(&cfg); err != nil {
		fmt.Fprintln(os.Stderr, "nmauth-chaos:", err)
		os.Exit(1)
	}
}

func mainErr(cfg *config) error {
	dir, err := os.MkdirTemp("", "nmauth-chaos-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg.Dir = dir
	if cfg.Nmauthd == "" {
		cfg.Nmauthd = filepath.Join(dir, "nmauthd")
		if out, err := exec.Command("go", "build", "-o", cfg.Nmauthd, "github.com/nmauth/nmauth/cmd/nmauthd").CombinedOutput(); err != nil {
			return fmt.Errorf("building nmauthd: %v\n%s", err, out)
		}
	}
	rep, err := run(cfg)
	if err != nil {
		return err
	}
	fmt.Print(rep.text())
	if len(rep.Violations) > 0 {
		return fmt.Errorf("%d violations", len(rep.Violations))
	}
	return nil
}

// run seeds the database, starts the replicas, drives the load with its
// faults, and checks the invariants.
func run(cfg *config) (*report, error) {
	version, cluster, ok := strings.Cut(cfg.Cluster, "/")
	if !ok {
		return nil, fmt.Errorf("cluster %q: want VERSION/NAME", cfg.Cluster)
	}
	sqlDB, err := sql.Open("pgx", cfg.DSN)
	if err != nil {
		return nil, err
	}
	defer sqlDB.Close()
	db := &database{dsn: cfg.DSN, version: version, cluster: cluster, db: sqlDB}
	ctx := context.Background()
	if err := db.resetSchema(ctx); err != nil {
		return nil, fmt.Errorf("emptying the database: %w", err)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6e6d61757468))
	secret := make([]byte, 32)
	for i := range secret {
		secret[i] = byte(rng.Uint32())
	}
	env := append(os.Environ(), "MASTER_KEY="+masterKey, "NMAUTH_SECRET="+hex.EncodeToString(secret), "NMAUTH_ENV=")
	f, ch, err := seed(cfg, env, rng)
	if err != nil {
		return nil, err
	}
	for i := range 3 {
		r := &replica{id: i, bin: cfg.Nmauthd, dsn: cfg.DSN, env: env, dir: cfg.Dir, log: new(bytes.Buffer)}
		if err := r.start(); err != nil {
			return nil, err
		}
		defer r.kill9()
		f.replicas = append(f.replicas, r)
	}
	rec := &recorder{}
	c := &client{http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}, rec: rec}
	ch.f, ch.c, ch.log = f, c, cfg.Log
	enrolled, err := enroll(f, c, rng)
	if err != nil {
		return nil, err
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range workers {
		wrng := rand.New(rand.NewPCG(cfg.Seed, uint64(i)))
		wg.Go(func() { f.steadyWorker(c, wrng, stop) })
	}
	for i, name := range slices.Sorted(maps.Keys(f.totp)) {
		wrng := rand.New(rand.NewPCG(cfg.Seed, uint64(100+i)))
		wg.Go(func() { f.totpWorker(c, wrng, name, enrolled[name], stop) })
	}
	crng := rand.New(rand.NewPCG(cfg.Seed, 200))
	wg.Go(func() { ch.run(crng, stop) })

	in := &injector{f: f, c: c, db: db, rng: rand.New(rand.NewPCG(cfg.Seed, 300)), log: cfg.Log}
	faults, ferr := schedule(cfg, in)
	close(stop)
	wg.Wait()
	if ferr != nil {
		return nil, ferr
	}
	failures, err := db.hostFailures(ctx, targetPrefix)
	if err != nil {
		return nil, fmt.Errorf("reading the attempt counts: %w", err)
	}
	recs := rec.all()
	r := &report{Seed: cfg.Seed, Faults: faults, Revocations: ch.revocations}
	r.tally(recs, failures)
	r.Violations = check(recs, failures, faults, f.replicas)
	return r, nil
}

// schedule injects the faults: each kind once in an order drawn from the
// seed, or kinds drawn at random until cfg.Duration has passed, with a
// quiet time of load before each.
func schedule(cfg *config, in *injector) ([]fault, error) {
	var faults []fault
	begin := time.Now()
	order := in.rng.Perm(len(faultKinds))
	for n := 0; ; n++ {
		var kind string
		if cfg.Duration == 0 {
			if n == len(faultKinds) {
				break
			}
			kind = faultKinds[order[n]]
		} else {
			if time.Since(begin) > cfg.Duration {
				break
			}
			kind = faultKinds[in.rng.IntN(len(faultKinds))]
		}
		time.Sleep(3 * time.Second)
		cfg.Log("fault: %s", kind)
		ft, err := in.apply(kind)
		if err != nil {
			return faults, err
		}
		cfg.Log("  full service after %s", ft.Recovered)
		faults = append(faults, ft)
	}
	time.Sleep(3 * time.Second)
	return faults, nil
}

// seed adds the accounts: stable hosts and users, target hosts that only
// get wrong secrets, TOTP users, and the churn's users.
func seed(cfg *config, env []string, rng *rand.Rand) (*fleet, *churn, error) {
	f := &fleet{hosts: map[string]string{}, users: map[string]string{}, totp: map[string]string{},
		secrets: map[string]string{}, password: "chaos-totp-password-1"}
	var lines strings.Builder
	for i := range 200 {
		id := fmt.Sprintf("host-%03d", i)
		f.hosts[id] = machineSecret(rng)
		f.hostIDs = append(f.hostIDs, id)
		fmt.Fprintf(&lines, "%s %s\n", id, f.hosts[id])
	}
	for i := range 8 {
		id := fmt.Sprintf("%s%02d", targetPrefix, i)
		f.targets = append(f.targets, id)
		fmt.Fprintf(&lines, "%s %s\n", id, machineSecret(rng))
	}
	ch := &churn{bin: cfg.Nmauthd, dsn: cfg.DSN, dir: cfg.Dir, env: env, passwords: map[string]string{},
		masterKey: masterKey, revocations: map[string]int{}, host: "churn-host", hostSecret: machineSecret(rng)}
	fmt.Fprintf(&lines, "%s %s\n", ch.host, ch.hostSecret)
	if out, err := runAdmin(cfg.Nmauthd, cfg.DSN, cfg.Dir, env, lines.String(), "host", "import"); err != nil {
		return nil, nil, fmt.Errorf("host import: %v\n%s", err, out)
	}
	add := func(name, password string) error {
		if out, err := runAdmin(cfg.Nmauthd, cfg.DSN, cfg.Dir, env, password+"\n", "user", "add", name); err != nil {
			return fmt.Errorf("user add %s: %v\n%s", name, err, out)
		}
		return nil
	}
	for i := range 3 {
		name := fmt.Sprintf("user-%d", i)
		f.users[name] = "chaos-user-password-" + name
		f.userIDs = append(f.userIDs, name)
		name2 := fmt.Sprintf("churn-%d", i)
		ch.users = append(ch.users, name2)
		ch.passwords[name2] = "chaos-churn-password-" + name2
		name3 := fmt.Sprintf("totp-%d", i)
		f.totp[name3] = f.password
		for _, err := range []error{add(name, f.users[name]), add(name2, ch.passwords[name2]), add(name3, f.password)} {
			if err != nil {
				return nil, nil, err
			}
		}
	}
	return f, ch, nil
}

// machineSecret draws a secret of netclient's form: 32 base32 characters.
func machineSecret(rng *rand.Rand) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	b := make([]byte, 32)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

// enroll turns TOTP on for the TOTP users through the first replica and
// returns the step each enrollment used.
func enroll(f *fleet, c *client, rng *rand.Rand) (map[string]int64, error) {
	steps := map[string]int64{}
	r := f.replicas[0]
	for name := range f.totp {
		from := clientAddr(rng)
		st, body := c.call(r, record{Op: opUserLogin, Account: name, Right: true}, "POST", "/api/users/adm/authenticate", "", from,
			map[string]string{"username": name, "password": f.password})
		token := field(body, "authToken")
		if st != 200 || token == "" {
			return nil, fmt.Errorf("login of %s to enroll: %d %s", name, st, body)
		}
		st, body = c.call(r, record{Op: opAdmin, Account: name, Right: true}, "POST", "/api/users/"+name+"/auth/init-totp", token, from, nil)
		otpURL, sig := field(body, "otp_auth_url"), field(body, "otp_auth_url_signature")
		u, err := url.Parse(otpURL)
		if st != 200 || err != nil || u.Query().Get("secret") == "" {
			return nil, fmt.Errorf("init-totp of %s: %d %s", name, st, body)
		}
		f.secrets[name] = u.Query().Get("secret")
		step := stepAt(time.Now())
		st, body = c.call(r, record{Op: opAdmin, Account: name, Right: true}, "POST", "/api/users/"+name+"/auth/complete-totp", token, from,
			map[string]string{"otp_auth_url": otpURL, "otp_auth_url_signature": sig, "totp": code(f.secrets[name], step)})
		if st != 200 {
			return nil, errors.New("complete-totp of " + name + ": " + string(body))
		}
		steps[name] = step
	}
	return steps, nil
}
