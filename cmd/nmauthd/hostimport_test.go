package main

import (
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostImport: host import adds the hosts on stdin, which log in over
// HTTP, and stops at the first bad line, naming its number and not its
// password.
func TestHostImport(t *testing.T) {
	dir := t.TempDir()
	env := baseEnv("MASTER_KEY=" + testMasterKey)
	db := filepath.Join(dir, "nmauth.db")
	seed(t, dir, env, db)
	secret := func() string {
		b := make([]byte, 32)
		rand.Read(b)
		return base32.StdEncoding.EncodeToString(b)[:32]
	}
	s1, s2, s4 := secret(), secret(), secret()
	in := fmt.Sprintf("# hosts of the fleet\nfleet-1 %s\n\nfleet-2 %s aa:bb:cc:dd:ee:ff\nfleet-3 a-chosen-password\n", s1, s2)
	if out := mustRun(t, dir, env, in, "host", "import", "--db", db); !strings.Contains(out, "3 hosts added") || strings.Contains(out, s1) {
		t.Errorf("host import printed %q", out)
	}
	r := runNmauthd(t, dir, env, "fleet-4 "+s4+"\nfleet-5\nfleet-6 "+s2+"\n", "host", "import", "--db", db)
	if r.code != exitFail || !strings.Contains(r.stderr, "line 2") || !strings.Contains(r.stderr, "1 hosts added") || strings.Contains(r.stderr, s2) {
		t.Errorf("bad line: exit %d, stderr %q", r.code, r.stderr)
	}
	d := startDaemon(t, dir, env, "--db", db)
	d.loginHost("fleet-1", "", s1)
	d.loginHost("fleet-2", "aa:bb:cc:dd:ee:ff", s2)
	d.loginHost("fleet-3", "", "a-chosen-password")
	d.loginHost("fleet-4", "", s4)
	if r := d.call("POST", "/api/hosts/adm/authenticate", "", map[string]string{"id": "fleet-6", "password": s2}); r.status != http.StatusUnauthorized {
		t.Errorf("a host after the bad line logged in: status %d", r.status)
	}
	d.stop()
}
