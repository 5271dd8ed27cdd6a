package main

import (
	"database/sql"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nmauth/nmauth"
)

// TestCheckRepairsBrokenRecord: with one user's recovery codes damaged in
// the database, nmauthd starts and serves everyone else, the broken
// user's login is a 500, every admin command runs, check lists the
// column, and check --repair makes it safe with an audit event, after
// which the user logs in.
func TestCheckRepairsBrokenRecord(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "nmauth.db")
	env := baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SECRET="+newRootSecret(t))
	mustRun(t, dir, env, "correct horse battery\n", "user", "add", "alice", "--db", db)
	mustRun(t, dir, env, "bob's long password\n", "user", "add", "bob", "--db", db)
	raw, err := sql.Open("sqlite", nmauth.SQLiteDSN(db))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("UPDATE nmauth_users SET recovery_codes = '{bad' WHERE name = 'bob'"); err != nil {
		t.Fatal(err)
	}
	raw.Close()

	d := startDaemon(t, dir, env, "--db", db)
	login := func(name, password string) int {
		return d.call(http.MethodPost, "/api/users/adm/authenticate", "", map[string]string{"username": name, "password": password}).status
	}
	if got := login("bob", "bob's long password"); got != http.StatusInternalServerError {
		t.Errorf("the broken user's login answered %d, want 500", got)
	}
	if got := login("alice", "correct horse battery"); got != http.StatusOK {
		t.Errorf("alice's login answered %d beside a broken record, want 200", got)
	}
	if got := d.call(http.MethodGet, "/readyz", "", nil).status; got != http.StatusOK {
		t.Errorf("/readyz answered %d, want 200: the store answers", got)
	}
	page := decode[struct {
		Items []struct {
			Name   string   `json:"name"`
			Broken []string `json:"broken"`
		} `json:"items"`
	}](t, d.call(http.MethodGet, "/api/admin/users", testMasterKey, nil), http.StatusOK)
	if len(page.Items) != 2 || page.Items[0].Broken != nil || page.Items[1].Name != "bob" || !slices.Equal(page.Items[1].Broken, []string{"recovery_codes"}) {
		t.Errorf("the admin listing = %+v, want alice sound and bob marked broken in recovery_codes", page.Items)
	}
	d.stop()

	mustRun(t, dir, env, "a whole new password\n", "user", "passwd", "alice", "--db", db)
	mustRun(t, dir, env, "", "user", "disable", "alice", "--db", db)
	if out := mustRun(t, dir, env, "", "user", "list", "--db", db); !strings.Contains(out, "bob") {
		t.Errorf("user list printed %q, want bob listed", out)
	}
	out := mustRun(t, dir, env, "", "check", "--db", db)
	if !strings.Contains(out, "bob") || !strings.Contains(out, "recovery_codes") || !strings.Contains(out, "1 broken columns") {
		t.Errorf("check printed %q, want bob's recovery_codes", out)
	}
	r := runNmauthd(t, dir, env, "", "check", "--repair", "--db", db)
	if r.code != 0 || !strings.Contains(r.stdout, "1 broken columns reset") || !strings.Contains(r.stderr, string(nmauth.EventRecordRepaired)) {
		t.Fatalf("check --repair: exit %d, stdout %q, stderr %q; want the repair and its audit event", r.code, r.stdout, r.stderr)
	}
	if out := mustRun(t, dir, env, "", "check", "--db", db); !strings.Contains(out, "no broken records") {
		t.Errorf("check after the repair printed %q", out)
	}
	d = startDaemon(t, dir, env, "--db", db)
	if got := login("bob", "bob's long password"); got != http.StatusOK {
		t.Errorf("bob's login after the repair answered %d, want 200", got)
	}
	d.stop()
}

// TestListsMarkBrokenRows: a value of the wrong type in one user's row
// (disabled = 'abc') and JSON null in the networks of one access token
// break those records alone. The daemon serves everyone else and the
// admin listing answers 200 with the user marked; the token is refused at
// the bearer check, not widened to every network; user list and token
// list print both, marked, and never as the zero value they hold; check
// finds both, and check --repair leaves the user disabled and deletes the
// token.
func TestListsMarkBrokenRows(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "nmauth.db")
	env := baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SECRET="+newRootSecret(t))
	mustRun(t, dir, env, "correct horse battery\n", "user", "add", "alice", "--db", db)
	mustRun(t, dir, env, "bob's long password\n", "user", "add", "bob", "--db", db)
	out := mustRun(t, dir, env, "", "token", "create", "bob", "ci", "--network", "home", "--db", db)
	token := strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:])
	raw, err := sql.Open("sqlite", nmauth.SQLiteDSN(db))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"UPDATE nmauth_users SET disabled = 'abc' WHERE name = 'bob'",
		"UPDATE nmauth_access_tokens SET networks = 'null' WHERE user_name = 'bob'",
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()

	d := startDaemon(t, dir, env, "--db", db)
	login := func(name, password string) int {
		return d.call(http.MethodPost, "/api/users/adm/authenticate", "", map[string]string{"username": name, "password": password}).status
	}
	if got := login("bob", "bob's long password"); got != http.StatusInternalServerError {
		t.Errorf("the broken user's login answered %d, want 500", got)
	}
	if got := login("alice", "correct horse battery"); got != http.StatusOK {
		t.Errorf("alice's login answered %d beside a broken record, want 200", got)
	}
	if got := d.call(http.MethodGet, "/api/whoami", token, nil).status; got != http.StatusInternalServerError {
		t.Errorf("whoami with the token whose networks are null answered %d, want 500", got)
	}
	page := decode[struct {
		Items []struct {
			Name   string   `json:"name"`
			Broken []string `json:"broken"`
		} `json:"items"`
	}](t, d.call(http.MethodGet, "/api/admin/users", testMasterKey, nil), http.StatusOK)
	if len(page.Items) != 2 || page.Items[0].Broken != nil || page.Items[1].Name != "bob" || !slices.Equal(page.Items[1].Broken, []string{"disabled"}) {
		t.Errorf("the admin listing = %+v, want alice sound and bob marked broken in disabled", page.Items)
	}
	d.stop()

	if rows := listUsers(t, dir, env, db); !slices.Equal(rows, []string{"alice no off", "bob ? off broken:disabled"}) {
		t.Errorf("user list rows = %q, want bob marked broken", rows)
	}
	tokens := mustRun(t, dir, env, "", "token", "list", "bob", "--db", db)
	if !strings.Contains(tokens, "broken:networks") || strings.Contains(tokens, "read-write") {
		t.Errorf("token list printed %q, want the token marked broken and no scope", tokens)
	}
	out = mustRun(t, dir, env, "", "check", "--db", db)
	if !strings.Contains(out, "disabled") || !strings.Contains(out, "networks") || !strings.Contains(out, "2 broken columns") {
		t.Errorf("check printed %q, want bob's disabled and the token's networks", out)
	}
	mustRun(t, dir, env, "", "check", "--repair", "--db", db)
	if out := mustRun(t, dir, env, "", "check", "--db", db); !strings.Contains(out, "no broken records") {
		t.Errorf("check after the repair printed %q", out)
	}
	if rows := listUsers(t, dir, env, db); !slices.Equal(rows, []string{"alice no off", "bob yes off"}) {
		t.Errorf("user list rows after the repair = %q, want bob disabled", rows)
	}
	if tokens := mustRun(t, dir, env, "", "token", "list", "bob", "--db", db); strings.Contains(tokens, "ci") {
		t.Errorf("token list after the repair printed %q, want the token gone", tokens)
	}
}
