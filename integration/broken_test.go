package integration

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nmauth/nmauth"
)

// TestBrokenRecord breaks each JSON column of each table in turn, and
// puts a value of the wrong type in columns of every type, for one
// account beside a sound one, on SQLite and PostgreSQL: the broken
// account's login and admin actions answer 500 with one log line naming
// it and the column, its neighbour is served, listings show it marked,
// the root-secret check and /readyz pass, and a repair makes the column
// safe, with an audit event. PostgreSQL's column types refuse the values
// of the wrong type outright, and the test checks that they do.
func TestBrokenRecord(t *testing.T) {
	cases := []struct {
		kind, key, column, breakSQL string
		// typed: PostgreSQL refuses breakSQL, or pgSQL when set (its
		// nearest form there), since the value is not of the column's
		// type.
		typed bool
		pgSQL string
		// sqliteOnly: PostgreSQL stores a bytea put in a text column as
		// its text form, so a blob where text belongs exists only in
		// SQLite.
		sqliteOnly bool
		// disables: the repair disables the account, since the value
		// lost could have kept someone out.
		disables bool
	}{
		{kind: "user", key: "bob", column: "recovery_codes", breakSQL: "UPDATE nmauth_users SET recovery_codes = '{bad' WHERE name = 'bob'"},
		{kind: "user", key: "bob", column: "password_clients", breakSQL: "UPDATE nmauth_users SET password_clients = '[{\"f\":\"x\"}]' WHERE name = 'bob'"},
		{kind: "user", key: "bob", column: "logged_out", breakSQL: "UPDATE nmauth_users SET logged_out = 'null,' WHERE name = 'bob'"},
		{kind: "host", key: "host-2", column: "password_clients", breakSQL: "UPDATE nmauth_hosts SET password_clients = '' WHERE id = 'host-2'"},
		{kind: "access token", column: "networks", breakSQL: "UPDATE nmauth_access_tokens SET networks = '[1]' WHERE user_name = 'bob'"},
		// JSON null where the store writes a list, and a negative
		// count: kinds both databases hold.
		{kind: "access token", column: "networks", breakSQL: "UPDATE nmauth_access_tokens SET networks = 'null' WHERE user_name = 'bob'"},
		{kind: "user", key: "bob", column: "logged_out", breakSQL: "UPDATE nmauth_users SET logged_out = 'null' WHERE name = 'bob'"},
		{kind: "host", key: "host-2", column: "password_clients", breakSQL: "UPDATE nmauth_hosts SET password_clients = ' null ' WHERE id = 'host-2'"},
		{kind: "user", key: "bob", column: "password_failures", breakSQL: "UPDATE nmauth_users SET password_failures = -1000 WHERE name = 'bob'"},
		// Values of the wrong type, which SQLite keeps.
		{kind: "user", key: "bob", column: "disabled", breakSQL: "UPDATE nmauth_users SET disabled = 'abc' WHERE name = 'bob'", typed: true, disables: true},
		{kind: "user", key: "bob", column: "totp_failures", breakSQL: "UPDATE nmauth_users SET totp_failures = 'many' WHERE name = 'bob'", typed: true},
		{kind: "user", key: "bob", column: "password_hash", breakSQL: "UPDATE nmauth_users SET password_hash = x'00ff' WHERE name = 'bob'", typed: true, sqliteOnly: true, disables: true},
		{kind: "user", key: "bob", column: "totp_secret", breakSQL: "UPDATE nmauth_users SET totp_secret = 'not a blob' WHERE name = 'bob'", typed: true, pgSQL: "UPDATE nmauth_users SET totp_secret = 'not a blob'::text WHERE name = 'bob'", disables: true},
		{kind: "user", key: "bob", column: "generation", breakSQL: "UPDATE nmauth_users SET generation = 1.5 WHERE name = 'bob'", typed: true, pgSQL: "UPDATE nmauth_users SET generation = '1.5' WHERE name = 'bob'"},
		{kind: "host", key: "host-2", column: "disabled", breakSQL: "UPDATE nmauth_hosts SET disabled = 'abc' WHERE id = 'host-2'", typed: true, disables: true},
		{kind: "host", key: "host-2", column: "mac_address", breakSQL: "UPDATE nmauth_hosts SET mac_address = x'0102' WHERE id = 'host-2'", typed: true, sqliteOnly: true, disables: true},
		{kind: "host", key: "host-2", column: "password_blocked_until", breakSQL: "UPDATE nmauth_hosts SET password_blocked_until = 'never' WHERE id = 'host-2'", typed: true},
		{kind: "access token", column: "read_only", breakSQL: "UPDATE nmauth_access_tokens SET read_only = 'maybe' WHERE user_name = 'bob'", typed: true},
		{kind: "access token", column: "expires_at", breakSQL: "UPDATE nmauth_access_tokens SET expires_at = 'later' WHERE user_name = 'bob'", typed: true},
		{kind: "access token", column: "name", breakSQL: "UPDATE nmauth_access_tokens SET name = x'6369' WHERE user_name = 'bob'", typed: true, sqliteOnly: true},
	}
	for _, b := range sqlBackends {
		t.Run(b.name, func(t *testing.T) {
			if b.dialect == nmauth.DialectPostgres {
				postgresDSN(t)
			}
			for _, c := range cases {
				t.Run(strings.ReplaceAll(c.kind, " ", "_")+"/"+c.column, func(t *testing.T) {
					if c.sqliteOnly && b.dialect != nmauth.DialectSQLite {
						return
					}
					db := b.fresh(t)(t)
					if c.typed && b.dialect == nmauth.DialectPostgres {
						newSQLStore(t, db, b.dialect)
						q := cmp.Or(c.pgSQL, c.breakSQL)
						if _, err := db.Exec(q); err == nil {
							t.Fatalf("PostgreSQL took %q", q)
						}
						return
					}
					testBrokenColumn(t, b.dialect, db, brokenCase{c.kind, c.key, c.column, c.breakSQL, c.disables})
				})
			}
		})
	}
}

// brokenCase is a column broken by breakSQL; disables says its repair
// disables the account.
type brokenCase struct {
	kind, key, column, breakSQL string
	disables                    bool
}

func testBrokenColumn(t *testing.T, d nmauth.Dialect, db *sql.DB, c brokenCase) {
	kind, key, column, breakSQL := c.kind, c.key, c.column, c.breakSQL
	ctx := context.Background()
	store := newSQLStore(t, db, d)
	logs := &lockedBuffer{}
	var events []nmauth.Event
	var eventsMu sync.Mutex
	srv := newServer(t, store, func(c *nmauth.Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelError}))
		c.OnEvent = func(_ context.Context, e nmauth.Event) {
			eventsMu.Lock()
			defer eventsMu.Unlock()
			events = append(events, e)
		}
	})
	a := srv.auth
	createAccounts(t, a)
	if err := a.Admin().CreateUser(ctx, "bob", "bob's long password"); err != nil {
		t.Fatal(err)
	}
	if err := a.Admin().CreateHost(ctx, "host-2", "", "host-password-2"); err != nil {
		t.Fatal(err)
	}
	master := nmauth.Principal{Kind: nmauth.KindMaster}
	token, secret, err := a.CreateAccessToken(ctx, master, nmauth.AccessTokenRequest{Name: "ci", UserName: "bob", Networks: []string{"home"}})
	if err != nil {
		t.Fatal(err)
	}
	if key == "" {
		key = token.ID
	}
	bobLogin, err := a.LoginUser(ctx, "bob", "bob's long password")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(breakSQL); err != nil {
		t.Fatalf("breaking %s: %v", column, err)
	}
	logs.Reset()

	// The broken account's own call: 500, one log line naming it and
	// the column; never 503, never 401.
	var r answer
	switch kind {
	case "user":
		r = srv.post(t, "/api/users/adm/authenticate", `{"username":"bob","password":"bob's long password"}`)
		if err := a.Admin().DisableUser(ctx, "bob"); !errors.Is(err, nmauth.ErrBrokenRecord) || errors.Is(err, nmauth.ErrStoreUnavailable) {
			t.Errorf("DisableUser(bob) = %v, want ErrBrokenRecord", err)
		}
	case "host":
		r = srv.post(t, "/api/hosts/adm/authenticate", `{"id":"host-2","password":"host-password-2"}`)
		if err := a.Admin().DisableHost(ctx, "host-2"); !errors.Is(err, nmauth.ErrBrokenRecord) || errors.Is(err, nmauth.ErrStoreUnavailable) {
			t.Errorf("DisableHost(host-2) = %v, want ErrBrokenRecord", err)
		}
	case "access token":
		_, err := a.CheckBearer(ctx, secret)
		if !errors.Is(err, nmauth.ErrBrokenRecord) || errors.Is(err, nmauth.ErrStoreUnavailable) {
			t.Fatalf("CheckBearer(the broken token) = %v, want ErrBrokenRecord", err)
		}
		rec := httptest.NewRecorder()
		a.WriteError(rec, httptest.NewRequest(http.MethodGet, "/", nil), err)
		r = answer{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
	}
	wantStatus(t, r, http.StatusInternalServerError)
	if bytes.Contains(r.body, []byte(column)) {
		t.Errorf("the 500 tells the client the column: %s", r.body)
	}
	lines := logs.Lines()
	if n := len(slices.DeleteFunc(slices.Clone(lines), func(l string) bool {
		return !strings.Contains(l, key) || !strings.Contains(l, column)
	})); n != 1 {
		t.Errorf("%d log lines name %s and %s, want 1; log:\n%s", n, key, column, strings.Join(lines, "\n"))
	}

	// Its neighbours are served.
	wantStatus(t, srv.userLogin(t, "correct horse battery"), http.StatusOK)
	wantStatus(t, srv.hostLogin(t, "host-password-1"), http.StatusOK)

	// Listings answer and mark the broken record.
	users, err := a.Admin().ListUsers(ctx, "", 10)
	if err != nil {
		t.Fatalf("ListUsers: %v", err)
	}
	hosts, err := a.Admin().ListHosts(ctx, "", 10)
	if err != nil {
		t.Fatalf("ListHosts: %v", err)
	}
	tokens, err := a.ListAccessTokens(ctx, master, "bob")
	if err != nil {
		t.Fatalf("ListAccessTokens: %v", err)
	}
	marked := map[string][]string{}
	for _, u := range users {
		marked["user "+u.Name] = u.Broken
	}
	for _, h := range hosts {
		marked["host "+h.ID] = h.Broken
	}
	for _, tok := range tokens {
		marked["access token "+tok.ID] = tok.Broken
	}
	for rec, broken := range marked {
		want := []string(nil)
		if rec == kind+" "+key {
			want = []string{column}
		}
		if !slices.Equal(broken, want) {
			t.Errorf("%s listed as broken in %v, want %v", rec, broken, want)
		}
	}
	if len(marked) != 5 {
		t.Errorf("listed %v, want 2 users, 2 hosts and a token", marked)
	}

	// Start-up's check and the readiness probe are untouched.
	if err := a.CheckSecrets(ctx); err != nil {
		t.Errorf("CheckSecrets: %v", err)
	}
	if err := a.Ready(ctx); err != nil {
		t.Errorf("Ready: %v", err)
	}

	// The repair finds the one broken column and makes it safe.
	found, err := a.Admin().BrokenRecords(ctx)
	if err != nil || len(found) != 1 || found[0].Kind != kind || found[0].Key != key || found[0].Column != column {
		t.Fatalf("BrokenRecords = %v, %v; want %s %s %s", found, err, kind, key, column)
	}
	if _, err := a.Admin().RepairRecords(ctx); err != nil {
		t.Fatalf("RepairRecords: %v", err)
	}
	if again, err := a.Admin().BrokenRecords(ctx); err != nil || len(again) != 0 {
		t.Fatalf("BrokenRecords after the repair = %v, %v; want none", again, err)
	}
	eventsMu.Lock()
	repaired := slices.ContainsFunc(events, func(e nmauth.Event) bool { return e.Type == nmauth.EventRecordRepaired && e.Name == key })
	eventsMu.Unlock()
	if !repaired {
		t.Errorf("no %s event for %s", nmauth.EventRecordRepaired, key)
	}
	if c.disables {
		// What the lost value kept out stays out: the account is
		// disabled until an administrator enables it again.
		testRepairDisabled(t, srv, kind)
		return
	}
	switch kind {
	case "user":
		wantStatus(t, srv.post(t, "/api/users/adm/authenticate", `{"username":"bob","password":"bob's long password"}`), http.StatusOK)
		if column == "logged_out" {
			// The tokens the lost list revoked die with every other.
			if _, err := a.CheckBearer(ctx, bobLogin.AuthToken); !errors.Is(err, nmauth.ErrUnauthenticated) {
				t.Errorf("a token from before the repair of logged_out: %v, want ErrUnauthenticated", err)
			}
		}
	case "host":
		wantStatus(t, srv.post(t, "/api/hosts/adm/authenticate", `{"id":"host-2","password":"host-password-2"}`), http.StatusOK)
	case "access token":
		// A scope that cannot be read is not widened: the token goes.
		if _, err := a.CheckBearer(ctx, secret); !errors.Is(err, nmauth.ErrUnauthenticated) {
			t.Errorf("the repaired token: %v, want ErrUnauthenticated", err)
		}
	}
}

// testRepairDisabled checks that the repaired account is listed disabled
// and its login refused as a disabled account's is.
func testRepairDisabled(t *testing.T, srv *server, kind string) {
	t.Helper()
	ctx := context.Background()
	switch kind {
	case "user":
		users, err := srv.auth.Admin().ListUsers(ctx, "", 10)
		if err != nil || len(users) != 2 || users[1].Name != "bob" || !users[1].Disabled || users[1].Broken != nil {
			t.Errorf("ListUsers after the repair = %+v, %v; want bob disabled and sound", users, err)
		}
		r := srv.post(t, "/api/users/adm/authenticate", `{"username":"bob","password":"bob's long password"}`)
		if r.status == http.StatusOK || r.status >= 500 {
			t.Errorf("bob's login after the repair answered %d, want a refusal", r.status)
		}
	case "host":
		hosts, err := srv.auth.Admin().ListHosts(ctx, "", 10)
		if err != nil || len(hosts) != 2 || hosts[1].ID != "host-2" || !hosts[1].Disabled || hosts[1].Broken != nil {
			t.Errorf("ListHosts after the repair = %+v, %v; want host-2 disabled and sound", hosts, err)
		}
		r := srv.post(t, "/api/hosts/adm/authenticate", `{"id":"host-2","password":"host-password-2"}`)
		if r.status == http.StatusOK || r.status >= 500 {
			t.Errorf("host-2's login after the repair answered %d, want a refusal", r.status)
		}
	}
}

// lockedBuffer collects log output from many goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

func (b *lockedBuffer) Lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.FieldsFunc(b.buf.String(), func(r rune) bool { return r == '\n' })
}
