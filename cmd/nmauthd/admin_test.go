package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAdminBadInput runs each admin subcommand with bad input: it must
// exit 1 with one line on stderr and change nothing.
func TestAdminBadInput(t *testing.T) {
	dir := t.TempDir()
	env := baseEnv("MASTER_KEY=" + testMasterKey)
	db := filepath.Join(dir, "nmauth.db")
	a := seed(t, dir, env, db)
	mustRun(t, dir, env, "bob-password\n", "user", "add", "bob", "--db", db)
	mustRun(t, dir, env, "", "user", "disable", "bob", "--db", db)
	want := []string{"alice no off", "bob yes off"}
	if got := listUsers(t, dir, env, db); !slices.Equal(got, want) {
		t.Fatalf("user list after seeding: %q, want %q", got, want)
	}

	cases := []struct {
		name   string
		stdin  string
		args   []string
		stderr string // a word the error line must hold
	}{
		{"duplicate user", "another-password\n", []string{"user", "add", "alice"}, "already exists"},
		{"duplicate user in another case", "another-password\n", []string{"user", "add", "ALICE"}, "already exists"},
		{"weak password", "short\n", []string{"user", "add", "carol"}, "password"},
		{"no password", "", []string{"user", "add", "carol"}, "password"},
		{"two-line password", "first-line\nsecond-line\n", []string{"user", "add", "carol"}, "password"},
		{"invalid username", "carol-password\n", []string{"user", "add", "car ol"}, "username"},
		{"disable unknown user", "", []string{"user", "disable", "nobody"}, "nobody"},
		{"totp-reset unknown user", "", []string{"user", "totp-reset", "nobody"}, "nobody"},
		{"passwd unknown user", "some-password\n", []string{"user", "passwd", "nobody"}, "nobody"},
		{"passwd weak password", "short\n", []string{"user", "passwd", "alice"}, "password"},
		{"duplicate host", "host-password-2\n", []string{"host", "add", a.host}, "already exists"},
		{"malformed MAC", "host-password-2\n", []string{"host", "add", "web-2", "--mac", "not-a-mac"}, "host"},
		{"weak host password", "short\n", []string{"host", "add", "web-2"}, "password"},
		{"host id with a space", "host-password-2\n", []string{"host", "add", "web 2"}, "host"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runNmauthd(t, dir, env, tc.stdin, append(tc.args, "--db", db)...)
			if r.code != exitFail {
				t.Errorf("exit status %d, want %d", r.code, exitFail)
			}
			if lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n"); len(lines) != 1 || !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("stderr %q, want one line about %q", r.stderr, tc.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
			if got := listUsers(t, dir, env, db); !slices.Equal(got, want) {
				t.Errorf("user list changed to %q, want %q", got, want)
			}
		})
	}

	// The host keeps its password and MAC address: only they log in.
	d := startDaemon(t, dir, env, "--db", db)
	d.loginHost(a.host, a.mac, a.hostPassword)
	for _, body := range []map[string]string{
		{"id": a.host, "password": "host-password-2"},
		{"id": "web-2", "password": "host-password-2"},
	} {
		if r := d.call("POST", "/api/hosts/adm/authenticate", "", body); r.status != http.StatusUnauthorized {
			t.Errorf("host login %s after the failed host add: status %d, want 401", body["id"], r.status)
		}
	}
	d.stop()
}

// TestAdminCommands runs each subcommand the way an operator would, and
// checks its effect through user list and the running server.
func TestAdminCommands(t *testing.T) {
	dir := t.TempDir()
	env := baseEnv("MASTER_KEY=" + testMasterKey)
	db := filepath.Join(dir, "nmauth.db")
	a := seed(t, dir, env, db)
	out := mustRun(t, dir, env, "host-password-2\n", "host", "add", "web-2", "--db", db)
	if strings.Contains(out, "host-password-2") {
		t.Errorf("host add printed the password it was given: %q", out)
	}
	d := startDaemon(t, dir, env, "--db", db)
	d.loginHost("web-2", "", "host-password-2")

	token := d.loginUser(a.user, a.password).AuthToken
	e := d.initTOTP(a.user, token)
	d.completeTOTP(a.user, token, e, totpCode(t, e.URL, time.Now()))
	if got := totpState(t, dir, env, db, a.user); got != "on" {
		t.Fatalf("after enrollment user list says TOTP %s", got)
	}

	mustRun(t, dir, env, "", "--db", db, "user", "totp-reset", "ALICE")
	if got := totpState(t, dir, env, db, a.user); got != "off" {
		t.Errorf("after totp-reset user list says TOTP %s", got)
	}
	if l := d.loginUser(a.user, a.password); l.TOTPRequired || l.AuthToken == "" {
		t.Errorf("after totp-reset login gave %+v, want a user token", l)
	}

	// A password change in another process revokes the user's tokens
	// within the documented 5 seconds.
	old := d.loginUser(a.user, a.password).AuthToken
	mustRun(t, dir, env, "a-new-password\n", "user", "passwd", a.user, "--db", db)
	deadline := time.Now().Add(5 * time.Second)
	for d.call("GET", "/api/whoami", old, nil).status == http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("token still accepted 5 s after the password changed")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := d.call("POST", "/api/users/adm/authenticate", "", map[string]string{"username": a.user, "password": a.password}); r.status != http.StatusUnauthorized {
		t.Errorf("login with the old password: status %d, want 401", r.status)
	}
	a.password = "a-new-password"
	d.loginUser(a.user, a.password)

	mustRun(t, dir, env, "", "user", "disable", a.user, "--db", db)
	if got := listUsers(t, dir, env, db); !slices.Equal(got, []string{"alice yes off"}) {
		t.Errorf("after disable user list says %q", got)
	}
	r := d.call("POST", "/api/users/adm/authenticate", "", map[string]string{"username": a.user, "password": a.password})
	if r.status != http.StatusUnauthorized {
		t.Errorf("login of a disabled user: status %d, want 401", r.status)
	}
	d.stop()
}

// TestUsageErrors: a malformed command line exits 2 with one line.
func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	env := baseEnv()
	cases := [][]string{
		{},
		{"frobnicate"},
		{"user"},
		{"user", "add"},
		{"user", "add", "a", "b"},
		{"user", "list", "--mac", "00:11:22:33:44:55"},
		{"user", "list", "--addr", "127.0.0.1:1"},
		{"serve", "--no-such-flag"},
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := runNmauthd(t, dir, env, "", args...)
			if r.code != exitUsage {
				t.Errorf("exit status %d, want %d", r.code, exitUsage)
			}
			if lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n"); len(lines) != 1 || !strings.HasPrefix(r.stderr, "nmauthd: ") {
				t.Errorf("stderr %q, want one nmauthd: line", r.stderr)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("usage errors left files: %v", entries)
	}
	if r := runNmauthd(t, dir, env, "", "--help"); r.code != 0 || !strings.Contains(r.stdout, "user totp-reset NAME") {
		t.Errorf("--help: exit %d, stdout %q", r.code, r.stdout)
	}
}

// auditCLI runs every admin command that changes an account, with
// --log-json, and requires each to log its own audit event naming the
// account and the master key as who made the change.
func auditCLI(t *testing.T, dir string, env []string, db string) {
	t.Helper()
	provideSecretFile(t, env, db)
	run := func(stdin, want, name string, args ...string) string {
		t.Helper()
		r := runNmauthd(t, dir, env, stdin, append([]string{"--db", db, "--log-json"}, args...)...)
		if r.code != 0 {
			t.Fatalf("nmauthd %v: exit %d\n%s", args, r.code, r.stderr)
		}
		for _, line := range strings.Split(r.stderr, "\n") {
			var rec struct {
				Msg   string `json:"msg"`
				Event struct {
					Type      string `json:"type"`
					Kind      string `json:"kind"`
					Name      string `json:"name"`
					ActorKind string `json:"actor_kind"`
				} `json:"event"`
			}
			if json.Unmarshal([]byte(line), &rec) != nil || rec.Msg != "audit" || rec.Event.Type != want {
				continue
			}
			if rec.Event.Name != name || rec.Event.ActorKind != "master" {
				t.Errorf("%v: audit event %s", args, line)
			}
			return r.stdout
		}
		t.Errorf("%v: no %s audit event in\n%s", args, want, r.stderr)
		return r.stdout
	}
	run("correct horse battery\n", "user.created", "alice", "user", "add", "alice")
	run("another good password\n", "user.password_set", "alice", "user", "passwd", "alice")
	out := run("", "access_token.created", "alice", "token", "create", "alice", "ci")
	id := strings.Fields(strings.TrimPrefix(out, "access token "))[0]
	run("", "access_token.revoked", "alice", "token", "delete", id)
	run("", "totp.reset", "alice", "user", "totp-reset", "alice")
	run("", "passkey.reset", "alice", "user", "passkeys-reset", "alice")
	run("", "sso.linked", "alice", "user", "sso-link", "alice", "https://id.example.test", "subject-1")
	run("", "user.disabled", "alice", "user", "disable", "alice")
	run("", "host.created", "8d0f3b2a-5c6e-4f71-9a3b-2c4d6e8f0a11", "host", "add", "8D0F3B2A-5C6E-4F71-9A3B-2C4D6E8F0A11")
}

func TestAdminCommandsAuditedSQLite(t *testing.T) {
	dir := t.TempDir()
	auditCLI(t, dir, baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SECRET="+newRootSecret(t)), filepath.Join(dir, "nmauth.db"))
}

func TestAdminCommandsAuditedPostgres(t *testing.T) {
	db := postgresDSN(t)
	auditCLI(t, t.TempDir(), baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SECRET="+newRootSecret(t)), db)
}
