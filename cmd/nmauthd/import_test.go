package main

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

const (
	importTOTPSecret = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"
	importHostID     = "0b7e4c2d-1f3a-4b5c-8d6e-7f8091a2b3c4"
	importHostSecret = "JRW6NMVDMIZKJ3TUGQFQ4EQOEQPJ7N6B"
)

// importCode computes a TOTP code of the imported secret at, as
// totpCode does, independently of the server's code.
func importCode(t *testing.T, at time.Time) string {
	t.Helper()
	return totpCode(t, "otpauth://totp/import?secret="+importTOTPSecret, at)
}

func bcrypt5(t *testing.T, password string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), 5)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

// TestUserImport: user import adds the users on stdin, one JSON object a
// line, with their hashes, TOTP secrets and disabled state; it skips and
// names each line it cannot read, and a second run adds nothing.
func TestUserImport(t *testing.T) {
	dir := t.TempDir()
	env := baseEnv("MASTER_KEY=" + testMasterKey)
	db := filepath.Join(dir, "nmauth.db")
	line := func(v map[string]any) string { b, _ := json.Marshal(v); return string(b) + "\n" }
	in := line(map[string]any{"name": "alice", "password_hash": bcrypt5(t, "alice's password")}) +
		line(map[string]any{"name": "bob", "password_hash": "pbkdf2_sha256$870000$DjangoSalt123$T8WDGiTu6GVjaA3dS/EZ6d15GAEUmAeua5KMN+HVFf0=", "totp_secret": importTOTPSecret}) +
		line(map[string]any{"name": "carol", "password": "carol's password", "disabled": true}) +
		line(map[string]any{"name": "dave", "password_hash": "{SSHA}c2VjcmV0"}) +
		"{not json\n" +
		line(map[string]any{"name": "erin", "password": "erin's password", "extra": 1})
	r := runNmauthd(t, dir, env, in, "user", "import", "--db", db, "--dry-run")
	if _, err := os.Stat(db); r.code != exitFail || !strings.Contains(r.stdout, "users: 3 to add, 0 already there, 3 skipped") || err == nil {
		t.Fatalf("dry run: exit %d (%v), stdout %q, stderr %q", r.code, err, r.stdout, r.stderr)
	}
	r = runNmauthd(t, dir, env, in, "user", "import", "--db", db)
	for _, want := range []string{"users: 3 added, 0 already there, 3 skipped", `skipped user "dave" on line 4: record cannot be imported: password hash: malformed password hash: unknown format`,
		"skipped user on line 5", "skipped user on line 6", `weak hash: user "alice": bcrypt cost 5 below 10`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("user import printed %q, want %q", r.stdout, want)
		}
	}
	if strings.Contains(r.stdout+r.stderr, "password'") {
		t.Errorf("a password shows: %s%s", r.stdout, r.stderr)
	}
	if again := runNmauthd(t, dir, env, in, "user", "import", "--db", db); !strings.Contains(again.stdout, "users: 0 added, 3 already there, 3 skipped") {
		t.Errorf("second run printed %q", again.stdout)
	}
	d := startDaemon(t, dir, env, "--db", db)
	d.whoami(d.loginUser("alice", "alice's password").AuthToken)
	pre := d.loginUser("bob", "imported password")
	if pre.AuthToken != "" || pre.PreAuthToken == "" {
		t.Fatalf("bob with TOTP: %+v", pre)
	}
	if r := d.verifyTOTP("bob", pre.PreAuthToken, importCode(t, time.Now())); r.status != http.StatusOK {
		t.Fatalf("bob's code: %d %s", r.status, r.body)
	}
	for _, c := range [][2]string{{"carol", "carol's password"}, {"alice", "wrong password"}, {"erin", "erin's password"}} {
		if r := d.call("POST", "/api/users/adm/authenticate", "", map[string]string{"username": c[0], "password": c[1]}); r.status != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", c[0], r.status)
		}
	}
	d.stop()
}

// netmakerRecords are a Netmaker server's records as its tables hold them:
// table, key, JSON value. The interop module writes them with Netmaker's
// own code; this is the shape, for the tests of this module.
func netmakerRecords(t *testing.T) [][3]string {
	t.Helper()
	mac, _ := net.ParseMAC("aa:bb:cc:dd:ee:01")
	j := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	return [][3]string{
		{"users", "alice", j(map[string]any{"username": "alice", "password": bcrypt5(t, "alice's password"), "auth_type": "basic_auth", "platform_role_id": "super-admin"})},
		{"users", "bob", j(map[string]any{"username": "bob", "password": bcrypt5(t, "bob's password"), "is_mfa_enabled": true, "totp_secret": importTOTPSecret})},
		{"users", "carol", j(map[string]any{"username": "carol", "password": bcrypt5(t, "carol's password"), "account_disabled": true})},
		{"users", "dave", j(map[string]any{"username": "dave", "password": bcrypt5(t, "random"), "external_identity_provider_id": "sub-dave", "auth_type": "oauth"})},
		{"users", "eve", j(map[string]any{"username": "eve", "password": "plain"})},
		{"users", "frank", "{not json"},
		{"users", "grace", j(map[string]any{"username": "grace", "password": bcrypt5(t, "grace's password"), "is_mfa_enabled": true})},
		{"nodes", "node-without-host", j(map[string]any{"hostid": "", "network": "net-1"})},
		{"hosts", importHostID, j(map[string]any{"id": importHostID, "hostpass": bcrypt5(t, importHostSecret), "macaddress": mac, "name": "h1"})},
		{"hosts", "not-a-uuid", j(map[string]any{"id": "not-a-uuid", "hostpass": bcrypt5(t, importHostSecret)})},
		{"nodes", "9a7e4c2d-1f3a-4b5c-8d6e-7f8091a2b3c4", j(map[string]any{"id": "9a7e4c2d-1f3a-4b5c-8d6e-7f8091a2b3c4", "hostid": importHostID, "network": "net-1"})},
		{"server_settings", "server_cfg", j(map[string]any{"authprovider": "oidc", "oidcissuer": "https://idp.example"})},
	}
}

// writeNetmaker makes Netmaker's key/value tables in db and fills them.
func writeNetmaker(t *testing.T, db *sql.DB, rebind func(string) string) {
	t.Helper()
	for _, table := range []string{"users", "hosts", "nodes", "server_settings"} {
		if _, err := db.Exec("CREATE TABLE " + table + " (key TEXT NOT NULL UNIQUE PRIMARY KEY, value TEXT)"); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range netmakerRecords(t) {
		if _, err := db.Exec(rebind("INSERT INTO "+r[0]+" (key, value) VALUES (?, ?)"), r[1], r[2]); err != nil {
			t.Fatal(err)
		}
	}
}

func TestImportNetmakerSQLite(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "netmaker.db")
	db, err := sql.Open("sqlite", src)
	if err != nil {
		t.Fatal(err)
	}
	writeNetmaker(t, db, func(q string) string { return q })
	db.Close()
	sum := func() string {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		s := sha256.Sum256(b)
		return hex.EncodeToString(s[:])
	}
	before := sum()
	testImportNetmaker(t, dir, baseEnv("MASTER_KEY="+testMasterKey), src, filepath.Join(dir, "nmauth.db"))
	if after := sum(); after != before {
		t.Error("the import changed Netmaker's database")
	}
	if entries, _ := filepath.Glob(src + "-*"); len(entries) > 0 {
		t.Errorf("the import left files beside Netmaker's database: %v", entries)
	}
}

func TestImportNetmakerPostgres(t *testing.T) {
	src := postgresDSN(t)
	db, err := sql.Open("pgx", src)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	writeNetmaker(t, db, func(q string) string { return strings.Replace(strings.Replace(q, "?", "$1", 1), "?", "$2", 1) })
	dump := func() string {
		h := sha256.New()
		for _, table := range []string{"users", "hosts", "nodes", "server_settings"} {
			rows, err := db.Query("SELECT key, value FROM " + table + " ORDER BY key")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var k, v string
				rows.Scan(&k, &v)
				fmt.Fprintf(h, "%s\x00%s\x00%s\n", table, k, v)
			}
			rows.Close()
		}
		return hex.EncodeToString(h.Sum(nil))
	}
	before := dump()
	testImportNetmaker(t, t.TempDir(), baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SECRET="+newRootSecret(t)), src, postgresDSN(t))
	if dump() != before {
		t.Error("the import changed Netmaker's database")
	}
}

// testImportNetmaker imports Netmaker's database src into target: a dry
// run that writes nothing, a run, and a second run that adds nothing;
// then the accounts log in as they did with Netmaker.
func testImportNetmaker(t *testing.T, dir string, env []string, src, target string) {
	r := runNmauthd(t, dir, env, "", "import", "netmaker", "--from", src, "--db", target, "--dry-run")
	if !strings.Contains(r.stdout, "dry run") || !strings.Contains(r.stdout, "users: 4 to add, 0 already there, 3 skipped") ||
		!strings.Contains(r.stdout, "hosts: 1 to add, 0 already there, 1 skipped") {
		t.Fatalf("dry run: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runNmauthd(t, dir, env, "", "import", "netmaker", "--from", src, "--db", target)
	for _, want := range []string{
		"users: 4 added, 0 already there, 3 skipped", "hosts: 1 added, 0 already there, 1 skipped", "memberships: 1 added",
		"single sign-on links: 1 added", `skipped host "not-a-uuid": its id is not a UUID`, `skipped user "frank": its value is not Netmaker's JSON`,
		`skipped user "grace": TOTP is on, but its secret is missing`, `skipped node "node-without-host": its host id is not a UUID`,
		`skipped user "eve": record cannot be imported: password hash: malformed password hash: unknown format`,
		`weak hash: host "` + importHostID + `": bcrypt cost 5 below 10`, `weak hash: user "alice": bcrypt cost 5 below 10`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("import printed %q, want %q", r.stdout, want)
		}
	}
	if r.code != exitFail {
		t.Errorf("import with skipped records: exit %d", r.code)
	}
	r = runNmauthd(t, dir, env, "", "import", "netmaker", "--from", src, "--db", target)
	if !strings.Contains(r.stdout, "users: 0 added, 4 already there, 3 skipped") || !strings.Contains(r.stdout, "hosts: 0 added, 1 already there, 1 skipped") ||
		!strings.Contains(r.stdout, "memberships: 0 added") || strings.Contains(r.stdout, "links") {
		t.Errorf("second run printed %q", r.stdout)
	}

	d := startDaemon(t, dir, env, "--db", target)
	d.whoami(d.loginUser("alice", "alice's password").AuthToken)
	pre := d.loginUser("bob", "bob's password")
	if r := d.verifyTOTP("bob", pre.PreAuthToken, importCode(t, time.Now())); r.status != http.StatusOK {
		t.Fatalf("bob's code: %d %s", r.status, r.body)
	}
	for _, c := range [][2]string{{"carol", "carol's password"}, {"alice", "wrong password"}, {"dave", "random"}} {
		if r := d.call("POST", "/api/users/adm/authenticate", "", map[string]string{"username": c[0], "password": c[1]}); r.status != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", c[0], r.status)
		}
	}
	if p := d.whoami(d.loginHost(importHostID, "aa:bb:cc:dd:ee:01", importHostSecret).AuthToken); p.Name != importHostID {
		t.Errorf("host token names %q", p.Name)
	}
	body := map[string]string{"id": importHostID, "password": importHostSecret}
	if r := d.call("POST", "/api/nodes/net-1/authenticate", "", body); r.status != http.StatusOK {
		t.Errorf("node login in net-1: %d %s", r.status, r.body)
	}
	if r := d.call("POST", "/api/nodes/net-2/authenticate", "", body); r.status != http.StatusForbidden {
		t.Errorf("node login in net-2: %d, want 403", r.status)
	}
	d.stop()
}
