package netmaker

import (
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gravitl/netmaker/database"
	nmdb "github.com/gravitl/netmaker/db"
	"github.com/gravitl/netmaker/models"
	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx", for the test's schema
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
	"golang.org/x/crypto/bcrypt"
)

// netmakerFleet is what a Netmaker server held before the import, with
// the passwords its users and hosts still know.
type netmakerFleet struct {
	passwords  map[string]string // by username
	totpSecret string            // bob's, as Netmaker kept it
	hostID     string
	hostSecret string
	mac        net.HardwareAddr
}

// netmakerHash hashes a password as Netmaker v1.4.0's logic.CreateUser and
// logic.CreateHost do: bcrypt of cost 5. Those functions need a running
// server's roles, settings and JWT secret, so the test calls the hashing
// they call.
func netmakerHash(t *testing.T, password string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), 5)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

// writeNetmaker opens the database that Netmaker's own environment names
// (DATABASE, SQL_*; SQLite in ./data/netmaker.db) with Netmaker's db and
// database packages, as its server does at start, and writes a fleet
// there as Netmaker's models, through database.Insert.
func writeNetmaker(t *testing.T) netmakerFleet {
	t.Helper()
	if err := nmdb.InitializeDB(); err != nil {
		t.Fatalf("Netmaker's db.InitializeDB: %v", err)
	}
	t.Cleanup(nmdb.CloseDB)
	if err := database.InitializeDatabase(); err != nil {
		t.Fatalf("Netmaker's database.InitializeDatabase: %v", err)
	}
	key, err := totp.Generate(totp.GenerateOpts{Issuer: "Netmaker", AccountName: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	f := netmakerFleet{
		passwords: map[string]string{
			"alice": "alice-password-1", "erin": "erin-password-2", "bob": "bob-password-3",
			"carol": "carol-password-4", "dave": "dave-random-5",
		},
		totpSecret: key.Secret(),
		hostID:     uuid.NewString(),
		hostSecret: rand.Text(),
		mac:        net.HardwareAddr{0x02, 0x42, 0xac, 0x11, 0x00, 0x07},
	}
	insert := func(key string, v any, table string) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := database.Insert(key, string(b), table); err != nil {
			t.Fatalf("Netmaker's database.Insert into %s: %v", table, err)
		}
	}
	user := func(name string) models.User {
		return models.User{UserName: name, Password: netmakerHash(t, f.passwords[name]), AuthType: models.BasicAuth, PlatformRoleID: models.ServiceUser}
	}
	admin := user("alice")
	admin.PlatformRoleID = models.SuperAdminRole
	bob := user("bob")
	bob.IsMFAEnabled, bob.TOTPSecret = true, f.totpSecret
	carol := user("carol")
	carol.AccountDisabled = true
	dave := user("dave")
	dave.AuthType, dave.ExternalIdentityProviderID = models.OAuth, "provider-subject-of-dave"
	for _, u := range []models.User{admin, user("erin"), bob, carol, dave} {
		insert(u.UserName, u, database.USERS_TABLE_NAME)
	}
	nodeID := uuid.New()
	host := models.Host{ID: uuid.MustParse(f.hostID), Name: "edge-1", HostPass: netmakerHash(t, f.hostSecret), MacAddress: f.mac, Nodes: []string{nodeID.String()}}
	insert(host.ID.String(), host, database.HOSTS_TABLE_NAME)
	node := models.Node{CommonNode: models.CommonNode{ID: nodeID, HostID: host.ID, Network: "net-1"}}
	insert(node.ID.String(), node, database.NODES_TABLE_NAME)
	insert("server_cfg", models.ServerSettings{AuthProvider: "oidc", OIDCIssuer: "https://sso.example.com"}, database.SERVER_SETTINGS)
	return f
}

// netmakerChecksum hashes every record of the tables the import reads,
// as Netmaker's database package reads them.
func netmakerChecksum(t *testing.T) string {
	t.Helper()
	h := sha256.New()
	for _, table := range []string{database.USERS_TABLE_NAME, database.HOSTS_TABLE_NAME, database.NODES_TABLE_NAME, database.SERVER_SETTINGS} {
		records, err := database.FetchRecords(table)
		if err != nil {
			t.Fatalf("Netmaker's database.FetchRecords(%s): %v", table, err)
		}
		for _, key := range slices.Sorted(maps.Keys(records)) {
			fmt.Fprintf(h, "%s\x00%s\x00%x\n", table, key, sha256.Sum256([]byte(records[key])))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestImportFromNetmakerSQLite: Netmaker's own packages write a SQLite
// database, nmauthd imports it, and every account logs in to nmauthd as
// it did to Netmaker; the database file is the same byte for byte.
func TestImportFromNetmakerSQLite(t *testing.T) {
	binaries(t) // builds from relative directories, before the Chdir
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("DATABASE", "sqlite")
	f := writeNetmaker(t)
	src := filepath.Join(dir, "data", "netmaker.db")
	sum := func() string {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		s := sha256.Sum256(b)
		return hex.EncodeToString(s[:])
	}
	before, records := sum(), netmakerChecksum(t)
	importAndLogIn(t, f, dir, src)
	if sum() != before || netmakerChecksum(t) != records {
		t.Error("the import changed Netmaker's SQLite database")
	}
}

// TestImportFromNetmakerPostgres: the same with Netmaker's PostgreSQL
// backend, in a schema of the test's own on the server that
// NMAUTH_TEST_POSTGRES names.
func TestImportFromNetmakerPostgres(t *testing.T) {
	dsn := os.Getenv("NMAUTH_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("NMAUTH_TEST_POSTGRES is not set in CI")
		}
		t.Skip(`NMAUTH_TEST_POSTGRES is not set; to run: export NMAUTH_TEST_POSTGRES="$(bash .ci/postgres)"`)
	}
	binaries(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal("NMAUTH_TEST_POSTGRES is not a URL")
	}
	schema := "netmaker_import_" + strings.ToLower(rand.Text()[:12])
	pass, _ := u.User.Password()
	// Netmaker's DSN is "host=… port=… user=… password=… dbname=…
	// sslmode=…" from SQL_* variables, with no setting of a schema; the
	// keyword after sslmode's value names one.
	t.Setenv("DATABASE", "postgres")
	t.Setenv("SQL_HOST", u.Hostname())
	t.Setenv("SQL_PORT", u.Port())
	t.Setenv("SQL_USER", u.User.Username())
	t.Setenv("SQL_PASS", pass)
	t.Setenv("SQL_DB", strings.TrimPrefix(u.Path, "/"))
	t.Setenv("SQL_SSL_MODE", u.Query().Get("sslmode")+" search_path="+schema)
	createSchema(t, dsn, schema)
	f := writeNetmaker(t)
	before := netmakerChecksum(t)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	importAndLogIn(t, f, t.TempDir(), u.String())
	if netmakerChecksum(t) != before {
		t.Error("the import changed Netmaker's PostgreSQL database")
	}
}

// importAndLogIn imports Netmaker's database src into a new nmauthd
// database in dir, twice, and then logs every account in as Netmaker's
// clients do: hosts as netclient, users with the real nmctl, the TOTP
// user with a code of the secret Netmaker kept.
func importAndLogIn(t *testing.T, f netmakerFleet, dir, src string) {
	t.Helper()
	bin, _ := binaries(t)
	db := filepath.Join(dir, "nmauth.db")
	secret := make([]byte, 32)
	rand.Read(secret)
	env := append(os.Environ(), "MASTER_KEY="+masterKey, "NMAUTH_SECRET="+hex.EncodeToString(secret), "NMAUTH_ENV=")
	run := func() string {
		cmd := exec.Command(bin, "import", "netmaker", "--from", src, "--db", db)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("nmauthd import netmaker: %v\n%s", err, out)
		}
		return string(out)
	}
	out := run()
	for _, want := range []string{"users: 5 added, 0 already there, 0 skipped", "hosts: 1 added, 0 already there, 0 skipped",
		"memberships: 1 added", "single sign-on links: 1 added", `weak hash: host "` + f.hostID + `": bcrypt cost 5 below 10`} {
		if !strings.Contains(out, want) {
			t.Errorf("import printed %q, want %q", out, want)
		}
	}
	if out := run(); !strings.Contains(out, "users: 0 added, 5 already there, 0 skipped") || !strings.Contains(out, "hosts: 0 added, 1 already there") ||
		!strings.Contains(out, "memberships: 0 added") || strings.Contains(out, "links") {
		t.Errorf("second import printed %q, want nothing added", out)
	}

	list := exec.Command(bin, "host", "list", "--db", db)
	list.Dir, list.Env = dir, env
	if out, err := list.CombinedOutput(); err != nil || !strings.Contains(string(out), f.hostID+"  no        "+f.mac.String()) {
		t.Errorf("nmauthd host list: %v\n%s\nwant the host with MAC address %s", err, out, f.mac)
	}

	s := serveDB(t, dir, db, env, "netmaker")
	// netclient's host login: models.AuthParams, then
	// Response.(map[string]any)["AuthToken"].(string).
	for range 2 { // the second login is on the digest the first one stored
		login := s.success(s.post("/api/hosts/adm/authenticate", "", models.AuthParams{MacAddress: f.mac.String(), ID: f.hostID, Password: f.hostSecret}))
		if st, who := s.whoami(authToken(t, login)); st != http.StatusOK || who != "host:"+f.hostID {
			t.Fatalf("host token: %d %s", st, who)
		}
	}
	node := s.success(s.post("/api/nodes/adm/net-1/authenticate", "", models.AuthParams{ID: f.hostID, Password: f.hostSecret}))
	if st, who := s.whoami(authToken(t, node)); st != http.StatusOK || who != "node:"+f.hostID {
		t.Errorf("node token: %d %s", st, who)
	}
	if st, body := s.post("/api/nodes/adm/net-2/authenticate", "", models.AuthParams{ID: f.hostID, Password: f.hostSecret}); st != http.StatusForbidden {
		t.Errorf("node login in another network: %d %s, want 403", st, body)
	}

	rc := &recorder{}
	proxy := httptest.NewServer(rc.handler(t, s))
	defer proxy.Close()
	for _, name := range []string{"alice", "erin"} {
		home := t.TempDir()
		for _, args := range [][]string{
			{"context", "set", "imported", "--endpoint", proxy.URL, "--username", name, "--password", f.passwords[name]},
			{"context", "use", "imported"},
			{"network", "list"},
		} {
			if out, err := runNmctl(t, home, args...); err != nil || args[0] == "network" && !strings.Contains(out, "net-1") {
				t.Fatalf("nmctl %v as %s: %v\n%s", args, name, err, out)
			}
		}
	}

	partial := into[models.PartialUserLoginResponse](t,
		s.success(s.post("/api/users/adm/authenticate", "", models.UserAuthParams{UserName: "bob", Password: f.passwords["bob"]})))
	if partial.PreAuthToken == "" {
		t.Fatalf("bob's login with TOTP on: %+v", partial)
	}
	code, err := totp.GenerateCodeCustom(f.totpSecret, time.Now(), totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	verified := s.success(s.post("/api/users/bob/auth/verify-totp", partial.PreAuthToken, models.UserTOTPVerificationParams{TOTP: code}))
	if st, who := s.whoami(authToken(t, verified)); st != http.StatusOK || who != "user:bob" {
		t.Errorf("bob's token: %d %s", st, who)
	}

	for _, tc := range []struct{ name, password string }{
		{"carol", f.passwords["carol"]}, // disabled in Netmaker
		{"alice", "not-alices-password"},
		{"dave", f.passwords["dave"]}, // signs in by single sign-on only
	} {
		st, body := s.post("/api/users/adm/authenticate", "", models.UserAuthParams{UserName: tc.name, Password: tc.password})
		var r models.ErrorResponse
		if json.Unmarshal(body, &r); st != http.StatusUnauthorized || r.Code != http.StatusUnauthorized {
			t.Errorf("%s: %d %s, want 401", tc.name, st, body)
		}
	}
}

// createSchema makes a schema of the test's own, dropped when it ends.
func createSchema(t *testing.T, dsn, schema string) {
	t.Helper()
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("NMAUTH_TEST_POSTGRES: creating a schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
		admin.Close()
	})
}
