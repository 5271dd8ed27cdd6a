package main

import (
	"database/sql"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nmauth/nmauth/sso/ssotest"
)

// Host ids of one host of Netmaker's written in two cases, and another.
const (
	upperHostID = "5C1E4C2D-1F3A-4B5C-8D6E-7F8091A2B3C4"
	lowerHostID = "5c1e4c2d-1f3a-4b5c-8d6e-7f8091a2b3c4"
	plainHostID = "6d2e4c2d-1f3a-4b5c-8d6e-7f8091a2b3c4"
)

// conflictUsers are the provider's users: the identities of the Netmaker
// users alice, bob (and dan) and carol, who sign in by single sign-on.
var conflictUsers = []ssotest.User{
	{Subject: "id2", Name: "alice-at-op", Password: "op-password-2", Email: "alice@example.com", EmailVerified: true},
	{Subject: "id3", Name: "bob-at-op", Password: "op-password-3", Email: "bob@example.com", EmailVerified: true},
	{Subject: "id4", Name: "carol-at-op", Password: "op-password-4", Email: "carol@example.com", EmailVerified: true},
}

// writeConflictingNetmaker writes a Netmaker database at path whose users
// Alice (a password) and alice (single sign-on as id2) would be one
// account in nmauth, as would its hosts upperHostID and lowerHostID.
func writeConflictingNetmaker(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	j := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	sso := func(name, subject string) string {
		return j(map[string]any{"username": name, "password": bcrypt5(t, "random"), "external_identity_provider_id": subject, "auth_type": "oauth"})
	}
	records := [][3]string{
		{"users", "Alice", j(map[string]any{"username": "Alice", "password": bcrypt5(t, "alice's password"), "auth_type": "basic_auth"})},
		{"users", "alice", sso("alice", "id2")},
		{"users", "bob", sso("bob", "id3")},
		{"users", "carol", sso("carol", "id4")},
		{"users", "dan", sso("dan", "id3")},
		{"hosts", upperHostID, j(map[string]any{"id": upperHostID, "hostpass": bcrypt5(t, "upper host secret")})},
		{"hosts", lowerHostID, j(map[string]any{"id": lowerHostID, "hostpass": bcrypt5(t, "lower host secret")})},
		{"hosts", plainHostID, j(map[string]any{"id": plainHostID, "hostpass": bcrypt5(t, "plain host secret")})},
		{"nodes", "n1", j(map[string]any{"hostid": upperHostID, "network": "net-1"})},
		{"nodes", "n2", j(map[string]any{"hostid": lowerHostID, "network": "net-2"})},
		{"nodes", "n3", j(map[string]any{"hostid": plainHostID, "network": "net-1"})},
	}
	for _, table := range []string{"users", "hosts", "nodes", "server_settings"} {
		if _, err := db.Exec("CREATE TABLE " + table + " (key TEXT NOT NULL UNIQUE PRIMARY KEY, value TEXT)"); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range records {
		if _, err := db.Exec("INSERT INTO "+r[0]+" (key, value) VALUES (?, ?)", r[1], r[2]); err != nil {
			t.Fatal(err)
		}
	}
}

func TestImportNetmakerConflictsSQLite(t *testing.T) {
	dir := t.TempDir()
	testImportNetmakerConflicts(t, dir, baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SSO_CLIENT_SECRET=sso-client-secret"),
		filepath.Join(dir, "nmauth.db"), "nmauthd-conflicts-sqlite")
}

func TestImportNetmakerConflictsPostgres(t *testing.T) {
	target := postgresDSN(t)
	testImportNetmakerConflicts(t, t.TempDir(), baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SSO_CLIENT_SECRET=sso-client-secret",
		"NMAUTH_SECRET="+newRootSecret(t)), target, "nmauthd-conflicts-postgres")
}

// testImportNetmakerConflicts: Netmaker's users Alice and alice, and its
// hosts whose ids differ only in case, are conflicts: named, in the dry
// run too, none of them imported, and the import exits 1. Then, at a real
// provider, alice's identity (id2) logs in to no account, where it once
// logged in to Alice's; bob's, whose account the import made, logs in as
// bob; carol's logs in to no account, since the account carol was there
// before the import and was not made from Netmaker's record. dan, whose
// identity is bob's too, is not made: the identity stays with bob.
func testImportNetmakerConflicts(t *testing.T, dir string, env []string, target, clientID string) {
	src := filepath.Join(dir, "netmaker.db")
	writeConflictingNetmaker(t, src)
	addr := freeAddr(t)
	callback := "http://" + addr + "/api/oauth/callback"
	issuer := ssotest.Start(t, conflictUsers, clientID, "sso-client-secret", callback)
	provideSecretFile(t, env, target)
	mustRun(t, dir, env, "carol's own password\n", "user", "add", "carol", "--db", target)

	conflicts := []string{
		`skipped user "Alice": conflict: it and "alice" would be one user in nmauth, so none of them is imported`,
		`skipped user "alice": conflict: it and "Alice" would be one user in nmauth, so none of them is imported`,
		`skipped host "` + upperHostID + `": conflict: it and "` + lowerHostID + `" would be one host in nmauth`,
		`skipped host "` + lowerHostID + `": conflict: it and "` + upperHostID + `" would be one host in nmauth`,
		`skipped single sign-on link "carol": the user "carol" was already there, not made from this record`,
		`skipped user "dan": its identity at the provider is already linked to the user "bob"`,
	}
	for _, dry := range []bool{true, false} {
		args := []string{"import", "netmaker", "--from", src, "--db", target, "--sso-issuer", issuer}
		counts := []string{"users: 1 added, 1 already there, 3 skipped", "hosts: 1 added, 0 already there, 2 skipped", "single sign-on links: 1 added"}
		if dry {
			args = append(args, "--dry-run")
			counts = []string{"users: 1 to add, 1 already there, 3 skipped", "hosts: 1 to add, 0 already there, 2 skipped", "single sign-on links: 1 to add"}
		}
		r := runNmauthd(t, dir, env, "", args...)
		if r.code != exitFail {
			t.Errorf("dry run %v: exit %d, want %d", dry, r.code, exitFail)
		}
		for _, want := range append(counts, conflicts...) {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("dry run %v printed %q, want %q", dry, r.stdout, want)
			}
		}
	}

	d := startDaemon(t, dir, env, "--db", target, "--addr", addr, "--sso-issuer", issuer, "--sso-client-id", clientID,
		"--sso-redirect-url", callback)
	waitSSO(t, d)
	for _, c := range []struct{ opUser, opPassword, want string }{
		{"alice-at-op", "op-password-2", ""},
		{"bob-at-op", "op-password-3", "bob"},
		{"carol-at-op", "op-password-4", ""},
	} {
		if got := ssoLogin(t, d.url, issuer, c.opUser, c.opPassword); got != c.want {
			t.Errorf("the SSO login of %s logged in as %q, want %q", c.opUser, got, c.want)
		}
	}
	if r := d.call("POST", "/api/users/adm/authenticate", "", map[string]string{"username": "alice", "password": "alice's password"}); r.status != http.StatusUnauthorized {
		t.Errorf("Alice, not imported, logs in: %d", r.status)
	}
	for _, h := range []struct{ id, secret string }{{upperHostID, "upper host secret"}, {lowerHostID, "lower host secret"}} {
		if r := d.call("POST", "/api/hosts/adm/authenticate", "", map[string]string{"id": h.id, "password": h.secret}); r.status != http.StatusUnauthorized {
			t.Errorf("host %s, not imported, logs in: %d", h.id, r.status)
		}
	}
	d.whoami(d.loginHost(plainHostID, "", "plain host secret").AuthToken)
	d.stop()
}

// TestImportLinesConflicts: user import and host import find the lines
// whose accounts would be one, name each with the others, in the dry run
// too, import none of them and exit 1; the other lines are imported.
func TestImportLinesConflicts(t *testing.T) {
	dir := t.TempDir()
	env := baseEnv("MASTER_KEY=" + testMasterKey)
	db := filepath.Join(dir, "nmauth.db")
	line := func(v map[string]any) string { b, _ := json.Marshal(v); return string(b) + "\n" }
	users := line(map[string]any{"name": "Alice", "password": "first alice's password"}) +
		line(map[string]any{"name": "bob", "password": "bob's password"}) +
		line(map[string]any{"name": "alice", "password": "second alice's password"})
	hosts := line(map[string]any{"id": "Web-1", "password": "first web password"}) +
		line(map[string]any{"id": "web-2", "password": "web-2's password"}) +
		"web-1 second-web-password\n"
	for _, dry := range []bool{true, false} {
		verb, flags := "added", []string{"--db", db}
		if dry {
			verb, flags = "to add", append(flags, "--dry-run")
		}
		r := runNmauthd(t, dir, env, users, append([]string{"user", "import"}, flags...)...)
		for _, want := range []string{"users: 1 " + verb + ", 0 already there, 2 skipped",
			`skipped user "Alice" on line 1: conflict: it and "alice" on line 3 would be one user in nmauth, so none of them is imported`,
			`skipped user "alice" on line 3: conflict: it and "Alice" on line 1 would be one user in nmauth`} {
			if r.code != exitFail || !strings.Contains(r.stdout, want) {
				t.Errorf("user import (dry run %v): exit %d, printed %q, want %q", dry, r.code, r.stdout, want)
			}
		}
		r = runNmauthd(t, dir, env, hosts, append([]string{"host", "import"}, flags...)...)
		for _, want := range []string{"hosts: 1 " + verb + ", 0 already there, 2 skipped",
			`skipped host "Web-1" on line 1: conflict: it and "web-1" on line 3 would be one host in nmauth`,
			`skipped host "web-1" on line 3: conflict: it and "Web-1" on line 1 would be one host in nmauth`} {
			if r.code != exitFail || !strings.Contains(r.stdout, want) {
				t.Errorf("host import (dry run %v): exit %d, printed %q, want %q", dry, r.code, r.stdout, want)
			}
		}
	}
	list := mustRun(t, dir, env, "", "user", "list", "--db", db)
	if strings.Contains(list, "alice") || !strings.Contains(list, "bob") {
		t.Errorf("user list after the import: %q", list)
	}
	list = mustRun(t, dir, env, "", "host", "list", "--db", db)
	if strings.Contains(strings.ToLower(list), "web-1") || !strings.Contains(list, "web-2") {
		t.Errorf("host list after the import: %q", list)
	}
}
