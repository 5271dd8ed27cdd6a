package integration

import (
	"bytes"
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

// TestBrokenRecord breaks each JSON column of each table in turn, for one
// account beside a sound one, on SQLite and PostgreSQL: the broken
// account's login and admin actions answer 500 with one log line naming
// it and the column, its neighbour is served, listings show it marked,
// the root-secret check and /readyz pass, and a repair makes the column
// safe, with an audit event.
func TestBrokenRecord(t *testing.T) {
	cases := []struct {
		kind, key, column, breakSQL string
	}{
		{"user", "bob", "recovery_codes", "UPDATE nmauth_users SET recovery_codes = '{bad' WHERE name = 'bob'"},
		{"user", "bob", "password_clients", "UPDATE nmauth_users SET password_clients = '[{\"f\":\"x\"}]' WHERE name = 'bob'"},
		{"user", "bob", "logged_out", "UPDATE nmauth_users SET logged_out = 'null,' WHERE name = 'bob'"},
		{"host", "host-2", "password_clients", "UPDATE nmauth_hosts SET password_clients = '' WHERE id = 'host-2'"},
		{"access token", "", "networks", "UPDATE nmauth_access_tokens SET networks = '[1]' WHERE user_name = 'bob'"},
	}
	for _, b := range sqlBackends {
		t.Run(b.name, func(t *testing.T) {
			if b.dialect == nmauth.DialectPostgres {
				postgresDSN(t)
			}
			for _, c := range cases {
				t.Run(strings.ReplaceAll(c.kind, " ", "_")+"/"+c.column, func(t *testing.T) {
					testBrokenColumn(t, b.dialect, b.fresh(t)(t), c.kind, c.key, c.column, c.breakSQL)
				})
			}
		})
	}
}

func testBrokenColumn(t *testing.T, d nmauth.Dialect, db *sql.DB, kind, key, column, breakSQL string) {
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
			t.Errorf("CheckBearer(the broken token) = %v, want ErrBrokenRecord", err)
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
