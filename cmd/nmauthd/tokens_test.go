package main

import (
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTokenCommands makes, lists and revokes an access token with the
// admin commands while nmauthd serves the same database: the served token
// carries its scope, the list never shows its secret, and the server
// refuses it within its status cache's lifetime once it is revoked.
func TestTokenCommands(t *testing.T) {
	dir := t.TempDir()
	env := baseEnv("MASTER_KEY=" + testMasterKey)
	db := filepath.Join(dir, "nmauth.db")
	a := seed(t, dir, env, db)
	out := mustRun(t, dir, env, "", "--db", db, "token", "create", a.user, "ci", "--read-only", "--network", "home", "--expires", "30d")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	token := lines[len(lines)-1]
	id := strings.Fields(lines[0])[2]
	if !strings.HasPrefix(token, "nmauth_at_"+id+"_") {
		t.Fatalf("token create printed %q", out)
	}
	list := mustRun(t, dir, env, "", "--db", db, "token", "list", a.user)
	if !strings.Contains(list, id) || !strings.Contains(list, "read-only in home") || strings.Contains(list, token[len("nmauth_at_")+17:]) {
		t.Fatalf("token list printed %q", list)
	}

	d := startDaemon(t, dir, env, "--db", db)
	who := decode[whoWithScope](t, d.call("GET", "/api/whoami", token, nil), http.StatusOK)
	if who.Kind != "access_token" || who.Name != a.user || !who.ReadOnly || !slices.Equal(who.Networks, []string{"home"}) || who.TokenID != id {
		t.Fatalf("whoami with the access token = %+v", who)
	}
	mustRun(t, dir, env, "", "--db", db, "token", "delete", id)
	deadline := time.Now().Add(5 * time.Second)
	for d.call("GET", "/api/whoami", token, nil).status != http.StatusUnauthorized {
		if time.Now().After(deadline) {
			t.Fatal("the server still accepts the revoked token after 5 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := runNmauthd(t, dir, env, "", "--db", db, "token", "create", "nobody", "x"); r.code != 1 || !strings.Contains(r.stderr, `no user "nobody"`) {
		t.Errorf("token create for nobody: exit %d, %q", r.code, r.stderr)
	}

	// A logout ends the user token it is called with, and no other.
	first := d.loginUser(a.user, a.password).AuthToken
	second := d.loginUser(a.user, a.password).AuthToken
	if r := d.call("POST", "/api/v1/users/logout", first, nil); r.status != http.StatusOK {
		t.Fatalf("logout: %d %s", r.status, r.body)
	}
	if r := d.call("GET", "/api/whoami", first, nil); r.status != http.StatusUnauthorized {
		t.Fatalf("whoami after logout: %d, want 401", r.status)
	}
	if who := d.whoami(second); who.Name != a.user {
		t.Fatalf("the other session: %+v", who)
	}
}

// whoWithScope is whoami's answer for an access token.
type whoWithScope struct {
	principal
	ReadOnly bool     `json:"readOnly"`
	Networks []string `json:"networks"`
	TokenID  string   `json:"tokenId"`
}
