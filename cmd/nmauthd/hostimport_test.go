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

// TestHostImport: host import adds the hosts on stdin, in the old
// "ID PASSWORD [MAC]" form or as JSON, which log in over HTTP; a line it
// cannot read is skipped and reported by its number, never its password,
// and the lines after it are imported.
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
	s1, s2, s4, s6 := secret(), secret(), secret(), secret()
	in := fmt.Sprintf("# hosts of the fleet\nfleet-1 %s\n\nfleet-2 %s aa:bb:cc:dd:ee:ff\nfleet-3 a-chosen-password\n", s1, s2)
	if out := mustRun(t, dir, env, in, "host", "import", "--db", db); !strings.Contains(out, "hosts: 3 added, 0 already there, 0 skipped") || strings.Contains(out, s1) {
		t.Errorf("host import printed %q", out)
	}
	in = "fleet-4 " + s4 + "\nfleet-5\n" + `{"id": "fleet-6", "password": "` + s6 + `", "networks": ["net-1"]}` + "\n" +
		`{"id": "fleet-7", "pasword": "` + s2 + `"}` + "\nfleet-1 " + s1 + "\n"
	r := runNmauthd(t, dir, env, in, "host", "import", "--db", db)
	if r.code != exitFail || !strings.Contains(r.stdout, "hosts: 2 added, 1 already there, 2 skipped") ||
		!strings.Contains(r.stdout, "skipped host on line 2") || !strings.Contains(r.stdout, "skipped host on line 4") ||
		strings.Contains(r.stdout+r.stderr, s2) || !strings.Contains(r.stdout, "memberships: 1 added") {
		t.Errorf("bad lines: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	d := startDaemon(t, dir, env, "--db", db)
	d.loginHost("fleet-1", "", s1)
	d.loginHost("fleet-2", "aa:bb:cc:dd:ee:ff", s2)
	d.loginHost("fleet-3", "", "a-chosen-password")
	d.loginHost("fleet-4", "", s4)
	d.loginHost("fleet-6", "", s6)
	if r := d.call("POST", "/api/nodes/net-1/authenticate", "", map[string]string{"id": "fleet-6", "password": s6}); r.status != http.StatusOK {
		t.Errorf("node login of fleet-6 in net-1: status %d", r.status)
	}
	if r := d.call("POST", "/api/hosts/adm/authenticate", "", map[string]string{"id": "fleet-7", "password": s2}); r.status != http.StatusUnauthorized {
		t.Errorf("a host of a skipped line logged in: status %d", r.status)
	}
	d.stop()
}
