package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// accounts are the records seeded with the admin subcommands.
type accounts struct {
	user, password          string
	host, mac, hostPassword string
}

// provideSecretFile writes a root secret file beside a SQLite database
// that has none, unless env sets NMAUTH_SECRET, as an operator does before
// the first admin command: admin commands never make one.
func provideSecretFile(t *testing.T, env []string, db string) {
	t.Helper()
	if isPostgresDSN(db) || slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "NMAUTH_SECRET=") }) {
		return
	}
	if _, err := os.Stat(db + ".secret"); err == nil {
		return
	}
	if err := os.WriteFile(db+".secret", []byte(newRootSecret(t)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// seed adds a user (password on stdin, flags after the name) and a host
// (generated password, flags before the name).
func seed(t *testing.T, dir string, env []string, db string) accounts {
	t.Helper()
	a := accounts{user: "alice", password: "correct horse battery staple", host: "web-1", mac: "00:11:22:aa:bb:cc"}
	provideSecretFile(t, env, db)
	out := mustRun(t, dir, env, a.password+"\n", "user", "add", a.user, "--db", db)
	if !strings.Contains(out, `user "alice" added`) {
		t.Errorf("user add printed %q", out)
	}
	out = mustRun(t, dir, env, "", "--db", db, "host", "add", a.host, "--mac", "00-11-22-AA-BB-CC")
	_, pw, ok := strings.Cut(strings.TrimSpace(out), "(shown once): ")
	if !ok || len(pw) < 16 {
		t.Fatalf("host add with empty stdin printed %q, want a generated password", out)
	}
	a.hostPassword = pw
	return a
}

// listUsers runs user list and returns its rows without the header.
func listUsers(t *testing.T, dir string, env []string, db string) []string {
	t.Helper()
	out := mustRun(t, dir, env, "", "user", "list", "--db", db)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) == 0 || strings.Join(strings.Fields(lines[0]), " ") != "NAME DISABLED TOTP" {
		t.Fatalf("user list header: %q", out)
	}
	rows := make([]string, 0, len(lines)-1)
	for _, l := range lines[1:] {
		rows = append(rows, strings.Join(strings.Fields(l), " "))
	}
	return rows
}

// walked is what a walk through the routes leaves for later checks.
type walked struct {
	userToken     string // minted by verify-totp
	otpURL        string
	recoveryCodes []string
	secrets       []string // every secret the walk saw, for the log check
}

// walk goes through every route over real HTTP: host login, user login,
// init-totp, complete-totp, login again (pre-auth), verify-totp, and
// whoami with each kind of bearer.
func walk(t *testing.T, d *daemon, a accounts) walked {
	t.Helper()
	h := d.loginHost(a.host, "00:11:22:AA:BB:CC", a.hostPassword)
	if h.ID != a.host || h.AuthToken == "" {
		t.Fatalf("host login answered %+v", h)
	}
	if p := d.whoami(h.AuthToken); p != (principal{Kind: "host", Name: a.host}) {
		t.Errorf("whoami with a host token: %+v", p)
	}
	// A changed MAC address is never answered as a wrong credential:
	// netclient would drop its configuration.
	if r := d.call("POST", "/api/hosts/adm/authenticate", "", map[string]string{"id": a.host, "macaddress": "66:77:88:99:aa:bb", "password": a.hostPassword}); r.status != http.StatusOK {
		t.Errorf("host login with another MAC: status %d, want 200", r.status)
	}

	l := d.loginUser(a.user, a.password)
	if l.AuthToken == "" || l.TOTPRequired || l.PreAuthToken != "" {
		t.Fatalf("user login without TOTP answered %+v", l)
	}
	if p := d.whoami(l.AuthToken); p != (principal{Kind: "user", Name: a.user}) {
		t.Errorf("whoami with a user token: %+v", p)
	}
	if p := d.whoami(testMasterKey); p != (principal{Kind: "master"}) {
		t.Errorf("whoami with the master key: %+v", p)
	}
	r := d.call("GET", "/api/whoami", "", nil)
	if r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") == "" {
		t.Errorf("whoami without bearer: status %d, WWW-Authenticate %q", r.status, r.header.Get("WWW-Authenticate"))
	}

	e := d.initTOTP(a.user, l.AuthToken)
	if !strings.HasPrefix(e.URL, "otpauth://totp/") || e.Signature == "" || !strings.HasPrefix(e.QRCode, "data:image/png;base64,") {
		t.Fatalf("init-totp answered %+v", e)
	}
	c := d.completeTOTP(a.user, l.AuthToken, e, totpCode(t, e.URL, time.Now()))
	if len(c.RecoveryCodes) != 10 {
		t.Fatalf("complete-totp gave %d recovery codes, want 10", len(c.RecoveryCodes))
	}

	pre := d.loginUser(a.user, a.password)
	if !pre.TOTPRequired || pre.PreAuthToken == "" || pre.AuthToken != "" {
		t.Fatalf("user login with TOTP on answered %+v", pre)
	}
	if r := d.call("GET", "/api/whoami", pre.PreAuthToken, nil); r.status != http.StatusUnauthorized {
		t.Errorf("whoami with a pre-auth token: status %d, want 401", r.status)
	}
	if r := d.verifyTOTP(a.user, pre.PreAuthToken, wrongCode(t, e.URL)); r.status != http.StatusUnauthorized {
		t.Errorf("verify-totp with a wrong code: status %d, want 401", r.status)
	}
	code := nextCode(t, e.URL)
	v := decode[userLogin](t, d.verifyTOTP(a.user, pre.PreAuthToken, code), http.StatusOK)
	if v.AuthToken == "" || v.UserName != a.user {
		t.Fatalf("verify-totp answered %+v", v)
	}
	if p := d.whoami(v.AuthToken); p != (principal{Kind: "user", Name: a.user, TOTP: true}) {
		t.Errorf("whoami with a token from verify-totp: %+v", p)
	}
	if r := d.verifyTOTP(a.user, pre.PreAuthToken, code); r.status != http.StatusUnauthorized {
		t.Errorf("verify-totp with a used pre-auth token and code: status %d, want 401", r.status)
	}
	secrets := []string{a.password, a.hostPassword, h.AuthToken, l.AuthToken, pre.PreAuthToken, v.AuthToken, e.Signature, testMasterKey}
	secrets = append(secrets, c.RecoveryCodes...)
	if u, err := url.Parse(e.URL); err == nil {
		secrets = append(secrets, u.Query().Get("secret"))
	}
	return walked{userToken: v.AuthToken, otpURL: e.URL, recoveryCodes: c.RecoveryCodes, secrets: secrets}
}

// afterRestart checks that the walk's data survived a restart: the token
// still works, TOTP is still on, a recovery code logs in, the host too.
func afterRestart(t *testing.T, d *daemon, a accounts, w walked) {
	t.Helper()
	if p := d.whoami(w.userToken); p.Kind != "user" || p.Name != a.user || !p.TOTP {
		t.Errorf("whoami with the token from before the restart: %+v", p)
	}
	pre := d.loginUser(a.user, a.password)
	if !pre.TOTPRequired {
		t.Fatalf("after restart, login did not ask for TOTP: %+v", pre)
	}
	v := decode[userLogin](t, d.verifyTOTP(a.user, pre.PreAuthToken, w.recoveryCodes[3]), http.StatusOK)
	if v.AuthToken == "" || v.RecoveryCodesLeft == nil || *v.RecoveryCodesLeft != 9 {
		t.Errorf("verify-totp with a recovery code after restart: %+v", v)
	}
	d.loginHost(a.host, "", a.hostPassword)
}

// checkLog requires one request line per request, JSON, and no secret.
func checkLog(t *testing.T, log string, secrets []string) {
	t.Helper()
	requests, audits := 0, 0
	for _, rec := range logRecords(t, log) {
		switch rec["msg"] {
		case "request":
			requests++
			for _, k := range []string{"method", "path", "status", "duration", "remote"} {
				if _, ok := rec[k]; !ok {
					t.Errorf("request line without %s: %v", k, rec)
				}
			}
		case "audit":
			audits++
		}
	}
	if requests == 0 || audits == 0 {
		t.Errorf("log has %d request lines and %d audit lines, want some of each", requests, audits)
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(log, s) {
			t.Errorf("the log contains a secret (%d characters)", len(s))
		}
	}
}

func TestSQLiteWalkAndRestart(t *testing.T) {
	dir := t.TempDir()
	env := baseEnv("MASTER_KEY=" + testMasterKey)
	db := filepath.Join(dir, "nmauth.db")
	a := seed(t, dir, env, db)

	d := startDaemon(t, dir, env, "--db", db, "--log-json", "--access-log")
	w := walk(t, d, a)
	if got := listUsers(t, dir, env, db); !slices.Equal(got, []string{"alice no on"}) {
		t.Errorf("user list while serving: %q", got)
	}
	d.stop()
	checkLog(t, d.stderr.String(), w.secrets)

	secretFile := db + ".secret"
	fi, err := os.Stat(secretFile)
	if err != nil {
		t.Fatalf("no root secret file beside the database: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("root secret file mode %04o, want 0600", fi.Mode().Perm())
	}
	secret, _ := os.ReadFile(secretFile)
	if !strings.Contains(d.stderr.String(), secretFile) || strings.Contains(d.stderr.String(), strings.TrimSpace(string(secret))) {
		t.Errorf("the log must name the secret file and never show its content")
	}

	d = startDaemon(t, dir, env, "--db", db, "--log-json")
	afterRestart(t, d, a, w)
	d.stop()
}

// TestKillDuringEnrollment kills nmauthd with SIGKILL at points of TOTP
// enrollment and requires that, after a restart, each user has TOTP
// either fully on (login asks for a code, and a code works) or fully off.
func TestKillDuringEnrollment(t *testing.T) {
	dir := t.TempDir()
	env := baseEnv("MASTER_KEY=" + testMasterKey)
	db := filepath.Join(dir, "nmauth.db")
	const password = "kill-nine-password"
	provideSecretFile(t, env, db)
	type killCase struct {
		name string
		kill func(d *daemon, user, token string, e enrollment)
		want string // "on", "off", or "" for either
	}
	cases := []killCase{
		{"after init-totp", func(d *daemon, user, token string, e enrollment) { d.kill9() }, "off"},
		{"after complete-totp answered", func(d *daemon, user, token string, e enrollment) {
			sendAndKill(t, d, user, token, e, -1)
		}, "on"},
	}
	// Right after the complete-totp request is sent, and a little later,
	// so that some kill lands while the server is at work on it.
	for _, delay := range []time.Duration{0, time.Millisecond, 3 * time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond} {
		cases = append(cases, killCase{"complete-totp sent, kill after " + delay.String(), func(d *daemon, user, token string, e enrollment) {
			sendAndKill(t, d, user, token, e, delay)
		}, ""})
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			user := "kim" + string(rune('a'+i))
			mustRun(t, dir, env, password, "user", "add", user, "--db", db)
			d := startDaemon(t, dir, env, "--db", db)
			token := d.loginUser(user, password).AuthToken
			e := d.initTOTP(user, token)
			tc.kill(d, user, token, e)

			d = startDaemon(t, dir, env, "--db", db)
			state := totpState(t, dir, env, db, user)
			t.Logf("after the kill TOTP is %s", state)
			if tc.want != "" && state != tc.want {
				t.Fatalf("after the kill TOTP is %s, want %s", state, tc.want)
			}
			l := d.loginUser(user, password)
			switch state {
			case "on":
				if !l.TOTPRequired {
					t.Fatalf("user list says TOTP on, but login gave %+v", l)
				}
				r := d.verifyTOTP(user, l.PreAuthToken, nextCode(t, e.URL))
				if r.status != http.StatusOK {
					t.Fatalf("TOTP on after the kill, but a valid code got %d: %s", r.status, r.body)
				}
			case "off":
				if l.TOTPRequired || l.AuthToken == "" {
					t.Fatalf("user list says TOTP off, but login gave %+v", l)
				}
				// The enrollment can still be completed after the restart.
				d.completeTOTP(user, l.AuthToken, e, nextCode(t, e.URL))
				if got := totpState(t, dir, env, db, user); got != "on" {
					t.Fatalf("after completing again TOTP is %s", got)
				}
			}
			d.stop()
		})
	}
}

// sendAndKill writes a complete-totp request on a connection of its own
// and kills the server with SIGKILL after delay, or once the answer has
// come if delay is negative.
func sendAndKill(t *testing.T, d *daemon, user, token string, e enrollment, delay time.Duration) {
	t.Helper()
	body, err := json.Marshal(completeBody(e, totpCode(t, e.URL, time.Now())))
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest("POST", d.url+"/api/users/"+user+"/auth/complete-totp", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	conn, err := net.Dial("tcp", req.URL.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	if delay >= 0 {
		time.Sleep(delay)
	} else {
		resp, err := http.ReadResponse(bufio.NewReader(conn), req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("complete-totp: status %d", resp.StatusCode)
		}
	}
	d.kill9()
}

// totpState reads "on" or "off" for user from user list.
func totpState(t *testing.T, dir string, env []string, db, user string) string {
	t.Helper()
	for _, row := range listUsers(t, dir, env, db) {
		f := strings.Fields(row)
		if len(f) == 3 && f[0] == user {
			return f[2]
		}
	}
	t.Fatalf("user %s not in user list", user)
	return ""
}

// postgresDSN returns a DSN for a schema of the test's own on the server
// named by NMAUTH_TEST_POSTGRES, dropped when the test ends.
func postgresDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("NMAUTH_TEST_POSTGRES")
	if dsn == "" {
		requireCI(t, `NMAUTH_TEST_POSTGRES is not set; to run the PostgreSQL tests: export NMAUTH_TEST_POSTGRES="$(bash .ci/postgres)"`)
	}
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	schema := "nmauthd_test_" + strings.ToLower(rand.Text())
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("NMAUTH_TEST_POSTGRES: creating a schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal("NMAUTH_TEST_POSTGRES is not a URL")
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func newRootSecret(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func TestPostgresWalkAndRestart(t *testing.T) {
	db := postgresDSN(t)
	dir := t.TempDir()
	env := baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SECRET="+newRootSecret(t))
	a := seed(t, dir, env, db)

	d := startDaemon(t, dir, env, "--db", db, "--log-json", "--access-log")
	w := walk(t, d, a)
	d.stop()
	pgURL, _ := url.Parse(db)
	pgPassword, _ := pgURL.User.Password()
	checkLog(t, d.stderr.String(), append(w.secrets, db, pgPassword))
	if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) != 0 {
		t.Errorf("nmauthd on PostgreSQL left files: %v", files)
	}

	d = startDaemon(t, dir, env, "--db", db, "--log-json")
	afterRestart(t, d, a, w)
	d.stop()
}

// TestPostgresTwoReplicasOneCode sends the same valid code with the same
// pre-auth token to two nmauthd processes on one database at once: the
// code must be accepted exactly once.
func TestPostgresTwoReplicasOneCode(t *testing.T) {
	db := postgresDSN(t)
	dir := t.TempDir()
	env := baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SECRET="+newRootSecret(t))
	const password = "replica-password"
	users := []string{"rita", "rudi", "ruth"}
	for _, u := range users {
		mustRun(t, dir, env, password, "user", "add", u, "--db", db)
	}
	replicas := []*daemon{startDaemon(t, dir, env, "--db", db), startDaemon(t, dir, env, "--db", db)}
	for _, user := range users {
		a := replicas[0]
		token := a.loginUser(user, password).AuthToken
		e := a.initTOTP(user, token)
		a.completeTOTP(user, token, e, totpCode(t, e.URL, time.Now()))
		pre := replicas[1].loginUser(user, password).PreAuthToken
		statuses := raceVerify(t, replicas, user, pre, nextCode(t, e.URL))
		slices.Sort(statuses)
		if !slices.Equal(statuses, []int{http.StatusOK, http.StatusUnauthorized}) {
			t.Errorf("%s: statuses %v, want exactly one 200 and one 401", user, statuses)
		}
	}
	for _, d := range replicas {
		d.stop()
	}
}

// raceVerify sends one verify-totp to each replica at the same moment.
func raceVerify(t *testing.T, replicas []*daemon, user, preAuth, code string) []int {
	t.Helper()
	body, err := json.Marshal(map[string]string{"totp": code})
	if err != nil {
		t.Fatal(err)
	}
	start := make(chan struct{})
	statuses := make([]int, len(replicas))
	errs := make([]error, len(replicas))
	var wg sync.WaitGroup
	for i, d := range replicas {
		req, err := http.NewRequest("POST", d.url+"/api/users/"+user+"/auth/verify-totp", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+preAuth)
		wg.Go(func() {
			<-start
			resp, err := httpClient.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		})
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return statuses
}
