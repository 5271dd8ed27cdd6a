package netmaker

import (
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gravitl/netmaker/models"
)

// TestRealNetmakerFront runs nmauthd serve --netmaker-db in front of
// Netmaker v1.4.0's own server (see startNetmaker), on SQLite and on
// PostgreSQL, behind the shipped deploy/Caddyfile run with Debian's Caddy
// (see frontThroughCaddy): the real nmctl logs in through Caddy and lists
// Netmaker's networks; a host registered through Netmaker's register
// route logs in at nmauthd and pulls its state from Netmaker with that
// token; a user token lives as long as Netmaker's own for the client that
// logs in (X-Application-Name), by Netmaker's settings; TOTP turned on at
// nmauthd holds and Netmaker accepts the token it ends with; a user made
// through Netmaker's API logs in within 5 s; and nmauthd leaves Netmaker's
// tables as they were.
func TestRealNetmakerFront(t *testing.T) {
	for _, database := range []string{"sqlite", "postgres"} {
		t.Run(database, func(t *testing.T) {
			nm := startNetmaker(t, database)
			a := seedNetmaker(nm)
			// Netmaker gives a user token a lifetime by the client that
			// logs in: set through its API, 30 minutes for a login that
			// names none (nmctl) and 90 for another client; its own
			// logins show them.
			nm.SetUserTokenTTLs(a.AdminToken, 90, 30)
			lifetimes := map[string]time.Duration{"": 30 * time.Minute, "netmaker-ui": 90 * time.Minute}
			for app, want := range lifetimes {
				if got := tokenLifetime(t, loginAs(t, http.DefaultClient, nm.URL, app, a.Admin, a.AdminPassword)); got != want {
					t.Fatalf("Netmaker's own login as %q: its token lives %v, want %v", app, got, want)
				}
			}
			c := frontThroughCaddy(t, nm)
			// First what nmauthd alone serves, which must leave Netmaker's
			// tables as they are; Netmaker's own routes, which may write
			// them, come after.
			tables := settledTables(t, func() string { return realNetmakerTables(t, nm) })
			var login models.SuccessResponse
			st, b := c.call(t, http.MethodPost, "/api/hosts/adm/authenticate", "",
				models.AuthParams{ID: a.HostID.String(), Password: a.HostPassword, MacAddress: a.HostMAC.String()}, &login)
			if st != http.StatusOK {
				t.Fatalf("host login through Caddy: %d %s", st, b)
			}

			// The admin's logins through Caddy live as Netmaker's own do.
			admin := map[string]string{}
			for app, want := range lifetimes {
				admin[app] = loginAs(t, c.Client, c.URL, app, a.Admin, a.AdminPassword)
				if got := tokenLifetime(t, admin[app]); got != want {
					t.Errorf("nmauthd's login as %q: its token lives %v, want Netmaker's %v", app, got, want)
				}
			}

			// bob turns TOTP on at nmauthd with the token Netmaker accepts.
			bob := c.userLogin(t, a.User, a.UserPassword)
			var init models.SuccessResponse
			if st, b := c.call(t, http.MethodPost, "/api/users/"+a.User+"/auth/init-totp", bob, nil, &init); st != http.StatusOK {
				t.Fatalf("init-totp: %d %s", st, b)
			}
			e := into[models.TOTPInitiateResponse](t, init)
			if st, b := c.call(t, http.MethodPost, "/api/users/"+a.User+"/auth/complete-totp", bob, models.UserTOTPVerificationParams{
				OTPAuthURL: e.OTPAuthURL, OTPAuthURLSignature: e.OTPAuthURLSignature, TOTP: code(t, e.OTPAuthURL, time.Now()),
			}, nil); st != http.StatusOK {
				t.Fatalf("complete-totp: %d %s", st, b)
			}
			var partial models.SuccessResponse
			c.call(t, http.MethodPost, "/api/users/adm/authenticate", "", models.UserAuthParams{UserName: a.User, Password: a.UserPassword}, &partial)
			pre := into[models.PartialUserLoginResponse](t, partial)
			if pre.PreAuthToken == "" {
				t.Fatal("bob's next login asks no code")
			}
			var verified models.SuccessResponse
			if st, b := c.call(t, http.MethodPost, "/api/users/"+a.User+"/auth/verify-totp", pre.PreAuthToken,
				models.UserTOTPVerificationParams{TOTP: code(t, e.OTPAuthURL, time.Now().Add(30*time.Second))}, &verified); st != http.StatusOK {
				t.Fatalf("verify-totp: %d %s", st, b)
			}
			if realNetmakerTables(t, nm) != tables {
				t.Fatal("nmauthd changed Netmaker's tables")
			}

			// Netmaker's routes accept what nmauthd gave out.
			var pull models.HostPull
			if st, b := c.call(t, http.MethodGet, "/api/v1/host", authToken(t, login), nil, &pull); st != http.StatusOK || pull.Host.ID != a.HostID {
				t.Fatalf("GET /api/v1/host through Caddy with nmauthd's host token: %d %s", st, b)
			}
			if st, b := c.call(t, http.MethodGet, "/api/networks", authToken(t, verified), nil, nil); st != http.StatusOK || !strings.Contains(string(b), a.Network) {
				t.Fatalf("GET /api/networks through Caddy with the token of bob's TOTP login: %d %s", st, b)
			}
			for app, tok := range admin {
				if st, b := c.call(t, http.MethodGet, "/api/networks", tok, nil, nil); st != http.StatusOK {
					t.Fatalf("GET /api/networks through Caddy with the admin's token of a login as %q: %d %s", app, st, b)
				}
			}
			adminEnv := c.nmctlEnvironment(t, t.TempDir())
			for _, args := range [][]string{
				{"context", "set", "front", "--endpoint", c.URL, "--username", a.Admin, "--password", a.AdminPassword},
				{"context", "use", "front"},
				{"network", "list"},
			} {
				if out, err := nmctlEnv(t, adminEnv, args...); err != nil || args[0] == "network" && !strings.Contains(out, a.Network) {
					t.Fatalf("nmctl %v through Caddy: %v\n%s", args, err, out)
				}
			}

			// nmctl v1.4.0 has no TOTP step: it takes AuthToken from the
			// login's answer. bob, a TOTP user, logs in with his code over
			// HTTP, as the web UI does, and gives nmctl the token.
			bobEnv := c.nmctlEnvironment(t, t.TempDir())
			for _, args := range [][]string{
				{"context", "set", "bob", "--endpoint", c.URL, "--auth_token", authToken(t, verified)},
				{"context", "use", "bob"},
				{"network", "list"},
			} {
				if out, err := nmctlEnv(t, bobEnv, args...); err != nil || args[0] == "network" && !strings.Contains(out, a.Network) {
					t.Fatalf("nmctl %v through Caddy with bob's token: %v\n%s", args, err, out)
				}
			}
			// With his password nmctl gets no session: nmauthd answers a
			// pre-auth token, which nmctl does not read and Netmaker's
			// routes refuse; nmctl fails and saves no token.
			if st, b := c.call(t, http.MethodGet, "/api/networks", pre.PreAuthToken, nil, nil); st != http.StatusUnauthorized {
				t.Fatalf("GET /api/networks through Caddy with bob's pre-auth token: %d %s, want Netmaker's 401", st, b)
			}
			c.nmctlWithPasswordFails(t, c.URL, a.User, a.UserPassword, a.Network)

			carol := func() int {
				st, _ := c.call(t, http.MethodPost, "/api/users/adm/authenticate", "", models.UserAuthParams{UserName: "carol", Password: "carol-password-1"}, nil)
				return st
			}
			nm.CreateUser(a.AdminToken, "carol", "carol-password-1")
			eventually(t, "a user created through Netmaker's API", func() bool { return carol() == http.StatusOK })
			if st, b := nm.call(http.MethodDelete, "/api/users/carol", a.AdminToken, nil, nil); st != http.StatusOK {
				t.Fatalf("deleting carol through Netmaker's API: %d %s", st, b)
			}
			eventually(t, "a user deleted through Netmaker's API", func() bool { return carol() == http.StatusUnauthorized })

			id, password := uuid.New(), "host-password-"+rand.Text()[:8]
			nm.RegisterHost(a.EnrollmentToken, id, password, a.HostMAC)
			eventually(t, "a host registered through Netmaker's register route", func() bool {
				st, _ := c.call(t, http.MethodPost, "/api/hosts/adm/authenticate", "",
					models.AuthParams{ID: id.String(), Password: password, MacAddress: a.HostMAC.String()}, nil)
				return st == http.StatusOK
			})
		})
	}
}

// frontThroughCaddy deploys nmauthd in front of nm as docs/deploy.md
// does: nmauthd serve --wire netmaker --netmaker-db over nm's database,
// trusting the addresses Caddy forwards (--trusted-proxy), and the
// shipped deploy/Caddyfile in front of it and of nm. extra holds more of
// serve's flags and environment, as for serveDB.
func frontThroughCaddy(t *testing.T, nm *netmakerServer, extra ...string) *caddyProxy {
	t.Helper()
	dir := t.TempDir()
	secret := make([]byte, 32)
	rand.Read(secret)
	env := append(os.Environ(), "MASTER_KEY="+masterKey, "NMAUTH_SECRET="+hex.EncodeToString(secret), "NMAUTH_ENV=")
	s := serveDB(t, dir, filepath.Join(dir, "nmauth.db"), env, "netmaker",
		append([]string{"--netmaker-db=" + nm.DB, "--trusted-proxy=127.0.0.1/32"}, extra...)...)
	return startCaddy(t, strings.TrimPrefix(s.url, "http://"), strings.TrimPrefix(nm.URL, "http://"))
}

// nmctlWithPasswordFails runs the real nmctl with the password of a user
// who has TOTP on, against endpoint (through Caddy, or Netmaker's own
// URL): nmctl v1.4.0 has no TOTP step and takes AuthToken from the
// login's answer, which for such a user holds a pre-auth token instead,
// so `nmctl network list` fails, lists no network and saves no token. It
// returns the first line nmctl wrote.
func (c *caddyProxy) nmctlWithPasswordFails(t *testing.T, endpoint, user, password, network string) string {
	t.Helper()
	home := t.TempDir()
	env := c.nmctlEnvironment(t, home)
	for _, args := range [][]string{
		{"context", "set", user, "--endpoint", endpoint, "--username", user, "--password", password},
		{"context", "use", user},
	} {
		if out, err := nmctlEnv(t, env, args...); err != nil {
			t.Fatalf("nmctl %v: %v\n%s", args, err, out)
		}
	}
	out, err := nmctlEnv(t, env, "network", "list")
	if err == nil || strings.Contains(out, network) {
		t.Fatalf("nmctl network list at %s with the password of %s, who has TOTP on: %v, want a failure\n%s", endpoint, user, err, out)
	}
	if tok := savedToken(t, home); tok != "" {
		t.Fatalf("nmctl saved a token at %s for the password of %s, who has TOTP on: %s", endpoint, user, tok)
	}
	first, _, _ := strings.Cut(out, "\n")
	t.Logf("nmctl network list at %s with the password of %s, who has TOTP on: %v: %s", endpoint, user, err, first)
	return first
}

// userLogin logs a user in through Caddy and returns the token.
func (c *caddyProxy) userLogin(t *testing.T, name, password string) string {
	t.Helper()
	var r models.SuccessResponse
	if st, b := c.call(t, http.MethodPost, "/api/users/adm/authenticate", "", models.UserAuthParams{UserName: name, Password: password}, &r); st != http.StatusOK {
		t.Fatalf("%s's login through Caddy: %d %s", name, st, b)
	}
	return authToken(t, r)
}

// settledTables waits until Netmaker's server has written what the
// registration before made it write, in the background (the tables read
// the same twice, half a second apart), and returns their digest.
func settledTables(t *testing.T, digest func() string) string {
	t.Helper()
	last := digest()
	for range 20 {
		time.Sleep(500 * time.Millisecond)
		d := digest()
		if d == last {
			return d
		}
		last = d
	}
	t.Fatal("Netmaker's tables keep changing")
	return ""
}

// realNetmakerTables hashes the tables of a running Netmaker that nmauthd
// reads, over a read-only connection of the test's own.
func realNetmakerTables(t *testing.T, nm *netmakerServer) string {
	t.Helper()
	driver, dsn := "sqlite3", "file:"+nm.DB+"?mode=ro"
	if nm.Database == "postgres" {
		driver, dsn = "pgx", nm.DB
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h := sha256.New()
	for _, table := range []string{"users", "hosts", "nodes", "serverconf"} {
		rows, err := db.Query("SELECT key, value FROM " + table + " ORDER BY key")
		if err != nil {
			t.Fatalf("reading Netmaker's %s: %v", table, err)
		}
		for rows.Next() {
			var k string
			var v sql.NullString
			rows.Scan(&k, &v)
			fmt.Fprintf(h, "%s\x00%s\x00%x\n", table, k, sha256.Sum256([]byte(v.String)))
		}
		rows.Close()
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestRealNetmakerFrontAccountChanges: in front of Netmaker's own server,
// on SQLite and PostgreSQL, behind the shipped Caddyfile, what an operator
// changes through Netmaker's API holds at nmauthd within 5 s: TOTP turned on in Netmaker (the user
// then gives a code of the secret Netmaker keeps, once, and Netmaker
// accepts the token), a user disabled and enabled, a new password. The
// logins at nmauthd leave every table of Netmaker's database as it was.
func TestRealNetmakerFrontAccountChanges(t *testing.T) {
	for _, database := range []string{"sqlite", "postgres"} {
		t.Run(database, func(t *testing.T) {
			nm := startNetmaker(t, database)
			a := seedNetmaker(nm)
			secret := nm.EnableTOTP(nm.Login(a.User, a.UserPassword), a.User)
			c := frontThroughCaddy(t, nm)
			// nmctl with the password of a user with TOTP on fails alike
			// at Netmaker itself and at nmauthd through Caddy.
			if at, front := c.nmctlWithPasswordFails(t, nm.URL, a.User, a.UserPassword, a.Network),
				c.nmctlWithPasswordFails(t, c.URL, a.User, a.UserPassword, a.Network); at != front {
				t.Errorf("nmctl with the password of a TOTP user: %q at Netmaker, %q at nmauthd", at, front)
			}
			login := func(name, password string) (int, models.SuccessResponse) {
				var r models.SuccessResponse
				st, _ := c.call(t, http.MethodPost, "/api/users/adm/authenticate", "", models.UserAuthParams{UserName: name, Password: password}, &r)
				return st, r
			}
			digest := settledTables(t, nm.TablesDigest)

			// TOTP on in Netmaker: a code of its secret, accepted once.
			st, r := login(a.User, a.UserPassword)
			pre := into[models.PartialUserLoginResponse](t, r)
			if st != http.StatusOK || pre.PreAuthToken == "" {
				t.Fatalf("%s, TOTP on in Netmaker: %d %+v, want a pre-auth token", a.User, st, pre)
			}
			once := code(t, "otpauth://totp/x?secret="+secret, time.Now())
			var verified models.SuccessResponse
			if st, b := c.call(t, http.MethodPost, "/api/users/"+a.User+"/auth/verify-totp", pre.PreAuthToken, models.UserTOTPVerificationParams{TOTP: once}, &verified); st != http.StatusOK {
				t.Fatalf("verify-totp with Netmaker's secret: %d %s", st, b)
			}
			_, r = login(a.User, a.UserPassword)
			again := into[models.PartialUserLoginResponse](t, r)
			if st, _ := c.call(t, http.MethodPost, "/api/users/"+a.User+"/auth/verify-totp", again.PreAuthToken, models.UserTOTPVerificationParams{TOTP: once}, nil); st != http.StatusUnauthorized {
				t.Errorf("the same code again: %d, want 401 (Netmaker would take it)", st)
			}
			if nm.TablesDigest() != digest {
				t.Fatal("logins at nmauthd changed Netmaker's database")
			}
			if st, b := c.call(t, http.MethodGet, "/api/networks", authToken(t, verified), nil, nil); st != http.StatusOK {
				t.Fatalf("Netmaker with the token of the TOTP login: %d %s", st, b)
			}

			// Netmaker disables no super admin: dora is an admin.
			nm.CreateUser(nm.Login(a.Admin, a.AdminPassword), "dora", "dora-password-1")
			if st, _ := login("dora", "dora-password-1"); st != http.StatusOK {
				t.Fatalf("dora: %d", st)
			}
			nm.DisableUser("dora")
			eventually(t, "a user disabled in Netmaker", func() bool { st, _ := login("dora", "dora-password-1"); return st == http.StatusUnauthorized })
			nm.EnableUser("dora")
			eventually(t, "a user enabled in Netmaker", func() bool { st, _ := login("dora", "dora-password-1"); return st == http.StatusOK })
			nm.SetPassword("dora", "dora-password-2")
			eventually(t, "a new password set in Netmaker", func() bool {
				old, _ := login("dora", "dora-password-1")
				st, r := login("dora", "dora-password-2")
				if st != http.StatusOK || old != http.StatusUnauthorized {
					return false
				}
				st, _ = c.call(t, http.MethodGet, "/api/networks", authToken(t, r), nil, nil)
				return st == http.StatusOK
			})
		})
	}
}
