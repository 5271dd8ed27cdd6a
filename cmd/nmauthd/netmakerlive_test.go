package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// netmakerSQLite writes a Netmaker-shaped SQLite database (see
// writeNetmaker) and returns its path.
func netmakerSQLite(t *testing.T) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "netmaker.db")
	db, err := sql.Open("sqlite", src)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	writeNetmaker(t, db, func(q string) string { return q })
	return src
}

// TestNetmakerLiveReadOnly: the connection the live mode reads Netmaker's
// database over refuses every write, on SQLite and PostgreSQL, so that no
// path of nmauthd can change Netmaker's tables; and it reads them.
func TestNetmakerLiveReadOnly(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) string{
		"SQLite": netmakerSQLite,
		"PostgreSQL": func(t *testing.T) string {
			src := postgresDSN(t)
			db, err := sql.Open("pgx", src)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			writeNetmaker(t, db, func(q string) string { return strings.Replace(strings.Replace(q, "?", "$1", 1), "?", "$2", 1) })
			return src
		},
	} {
		t.Run(name, func(t *testing.T) {
			r, err := openNetmakerLive(context.Background(), open(t))
			if err != nil {
				t.Fatal(err)
			}
			defer r.close()
			ctx := context.Background()
			if u, found, err := r.user(ctx, "alice"); err != nil || !found || u.Password == "" {
				t.Fatalf("user alice: %+v %v %v", u, found, err)
			}
			for _, q := range []string{
				"INSERT INTO users (key, value) VALUES ('mallory', '{}')",
				"UPDATE users SET value = '{}'",
				"DELETE FROM hosts",
				"CREATE TABLE nmauth_probe (x TEXT)",
			} {
				if _, err := r.db.ExecContext(ctx, q); err == nil {
					t.Errorf("%s: the live connection wrote", q)
				}
			}
			if _, found, err := r.user(ctx, "mallory"); err != nil || found {
				t.Errorf("mallory: found %v, %v", found, err)
			}
		})
	}
}

// BenchmarkNetmakerLiveUserRead is the cost of one read of a Netmaker
// user that the live mode makes once a second per account: a point read
// of its users table and the decoding of its JSON.
func BenchmarkNetmakerLiveUserRead(b *testing.B) {
	src := filepath.Join(b.TempDir(), "netmaker.db")
	db, err := sql.Open("sqlite", src)
	if err != nil {
		b.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE users (key TEXT NOT NULL UNIQUE PRIMARY KEY, value TEXT)",
		`INSERT INTO users VALUES ('alice', '{"username":"alice","password":"$2a$05$abcdefghijklmnopqrstuuJ7vYVHkVq0aU0Y1s8q4kz2n5yQ9W8m6","platform_role_id":"super-admin","is_mfa_enabled":false}')`,
	} {
		if _, err := db.Exec(q); err != nil {
			b.Fatal(err)
		}
	}
	db.Close()
	r, err := openNetmakerLive(context.Background(), src)
	if err != nil {
		b.Fatal(err)
	}
	defer r.close()
	ctx := context.Background()
	for b.Loop() {
		clear(r.users)
		if _, found, err := r.user(ctx, "alice"); err != nil || !found {
			b.Fatal(err)
		}
	}
}

// setUserTokenTTLs writes Netmaker's two lifetimes of user tokens, in
// minutes, into its server settings as its server does, and lets the
// reader's last read of them age out.
func (f *netmakerFront) setUserTokenTTLs(t *testing.T, ui, clients int) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"jwt_validity_duration": ui, "jwt_validity_duration_clients": clients, "authprovider": "oidc"})
	if _, err := f.nm.Exec("INSERT INTO server_settings (key, value) VALUES ('server_cfg', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", string(b)); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(netmakerReadTTL)
}

// loginAs logs alice in through h as the client app names itself in
// X-Application-Name ("" sends none) and returns how long the token
// says it lives, read under Netmaker's secret.
func loginAs(t *testing.T, h http.Handler, app string) time.Duration {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/api/users/adm/authenticate", strings.NewReader(`{"username":"alice","password":"alice's password"}`))
	req.Header.Set("Content-Type", "application/json")
	if app != "" {
		req.Header.Set("X-Application-Name", app)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	var r struct{ Response struct{ AuthToken string } }
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &r) != nil {
		t.Fatalf("alice's login as %q: %d %s", app, w.Code, w.Body)
	}
	var c jwt.RegisteredClaims
	if _, err := jwt.ParseWithClaims(r.Response.AuthToken, &c, func(*jwt.Token) (any, error) { return []byte(netmakerJWTSecret), nil }); err != nil {
		t.Fatalf("alice's token as %q under Netmaker's secret: %v", app, err)
	}
	return c.ExpiresAt.Sub(c.IssuedAt.Time)
}

// TestNetmakerUserTokenLifetimes: in front of Netmaker a user token lives
// as Netmaker's server settings say now for the client that logs in
// (X-Application-Name): netclient, netmaker-desktop and a login that
// names none (nmctl) get jwt_validity_duration_clients, any other client
// (the web UI) jwt_validity_duration; a change in Netmaker holds for the
// next login, --user-token-ttl caps both, and the bearer check accepts
// what it gave. nmauthd writes none of Netmaker's tables.
func TestNetmakerUserTokenLifetimes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		flag        time.Duration
		ui, clients time.Duration
	}{
		{"Netmaker's", 0, 90 * time.Minute, 30 * time.Minute},
		{"capped by --user-token-ttl", 45 * time.Minute, 45 * time.Minute, 30 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newNetmakerFront(t, filepath.Join(t.TempDir(), "nmauth.db"), func(o *options) { o.userTokenTTL = tc.flag })
			f.setUserTokenTTLs(t, 90, 30)
			before := f.netmakerDump(t)
			h := withApplicationName(f.auth.Handler())
			for _, app := range []string{"", "netclient", "netmaker-desktop", "netmaker-ui"} {
				want := tc.clients
				if app == "netmaker-ui" {
					want = tc.ui
				}
				if got := loginAs(t, h, app); got != want {
					t.Errorf("a login as %q: the token lives %v, want %v", app, got, want)
				}
			}
			login, err := f.auth.LoginUser(withApplication(context.Background(), "netmaker-ui"), "alice", "alice's password")
			if err != nil {
				t.Fatal(err)
			}
			if p, err := f.auth.CheckBearer(context.Background(), login.AuthToken); err != nil || p.ExpiresAt.Sub(p.IssuedAt) != tc.ui {
				t.Errorf("the bearer check of the web UI's token: %+v, %v", p, err)
			}
			if f.netmakerDump(t) != before {
				t.Fatal("the logins changed Netmaker's tables")
			}

			// capped is d, or --user-token-ttl when that is shorter.
			capped := func(d time.Duration) time.Duration {
				if tc.flag > 0 {
					return min(d, tc.flag)
				}
				return d
			}
			f.setUserTokenTTLs(t, 600, 20)
			if got := loginAs(t, h, ""); got != 20*time.Minute {
				t.Errorf("once Netmaker's clients' lifetime is 20 min: the token lives %v", got)
			}
			if got := loginAs(t, h, "netmaker-ui"); got != capped(10*time.Hour) {
				t.Errorf("once Netmaker's lifetime for the web UI is 10 h: the token lives %v, want %v", got, capped(10*time.Hour))
			}
			// A setting so large that its minutes overflow a Duration is
			// the longest nmauthd gives, never a short or negative one.
			f.setUserTokenTTLs(t, 600, 1<<62)
			f.now = f.now.Add(netmakerReadTTL)
			if got := loginAs(t, h, ""); got != capped(netmakerLongestUserTTL) {
				t.Errorf("once Netmaker's clients' lifetime is 2^62 min: the token lives %v, want %v", got, capped(netmakerLongestUserTTL))
			}
			if _, err := f.nm.Exec(`UPDATE server_settings SET value = '{"authprovider":"oidc"}'`); err != nil {
				t.Fatal(err)
			}
			f.now = f.now.Add(netmakerReadTTL)
			if got := loginAs(t, h, ""); got != capped(netmakerDefaultUserTTL) {
				t.Errorf("with no lifetimes in Netmaker's settings: the token lives %v, want %v", got, capped(netmakerDefaultUserTTL))
			}
		})
	}
}
