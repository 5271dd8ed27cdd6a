package main

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEnrollmentKeyCommands makes an enrollment key with the admin
// command, which prints its key and Netmaker token once; a host registers
// with that token at nmauthd --wire netmaker and gets the server config
// of --netmaker-server-config and becomes a member of the key's network;
// the list shows the use spent and never the
// secret; a revoked key refuses the next host, stays listed, and is gone
// once deleted.
func TestEnrollmentKeyCommands(t *testing.T) {
	dir := t.TempDir()
	env := baseEnv("MASTER_KEY=" + testMasterKey)
	db := filepath.Join(dir, "nmauth.db")
	seed(t, dir, env, db)
	out := mustRun(t, dir, env, "", "--db", db, "enrollment-key", "create", "ci", "--uses", "2", "--network", "net-1", "--server", "nm.example.com")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	id, key := strings.Fields(lines[0])[2], lines[1]
	token, ok := strings.CutPrefix(lines[len(lines)-1], "netclient join -t ")
	if !strings.HasPrefix(key, "nmauth_ek_"+id+"_") || !ok {
		t.Fatalf("enrollment-key create printed %q", out)
	}
	cfgFile := filepath.Join(dir, "server.json")
	if err := os.WriteFile(cfgFile, []byte(`{"Server":"nm.example.com","Broker":"mqtts://broker.example.com"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, dir, env, "--db", db, "--wire", "netmaker", "--netmaker-server-config", cfgFile)
	var id0, pass0 string
	register := func() reply {
		raw := make([]byte, 20)
		rand.Read(raw)
		u := make([]byte, 16)
		rand.Read(u)
		u[6], u[8] = u[6]&0x0f|0x40, u[8]&0x3f|0x80
		id0, pass0 = fmt.Sprintf("%x-%x-%x-%x-%x", u[:4], u[4:6], u[6:8], u[8:10], u[10:]), base32.StdEncoding.EncodeToString(raw)[:32]
		return d.call("POST", "/api/v1/host/register/"+token, "", map[string]any{
			"id":         id0,
			"hostpass":   pass0,
			"macaddress": base64.StdEncoding.EncodeToString([]byte{2, 0, 0, 0, 0, 1}),
		})
	}
	r := register()
	var joined struct {
		ServerConfig map[string]string `json:"server_config"`
	}
	if err := json.Unmarshal(r.body, &joined); r.status != http.StatusOK || err != nil || joined.ServerConfig["Broker"] != "mqtts://broker.example.com" {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	// The host is a member of the key's network: its node login there
	// succeeds.
	if r := d.call("POST", "/api/nodes/net-1/authenticate", "", map[string]string{"id": id0, "password": pass0}); r.status != http.StatusOK {
		t.Fatalf("the joined host's node login in the key's network: %d %s", r.status, r.body)
	}
	list := mustRun(t, dir, env, "", "--db", db, "enrollment-key", "list")
	if !strings.Contains(list, id) || !strings.Contains(list, "1 of 2 uses spent") || strings.Contains(list, key[len("nmauth_ek_")+17:]) {
		t.Fatalf("enrollment-key list printed %q", list)
	}
	mustRun(t, dir, env, "", "--db", db, "enrollment-key", "revoke", id)
	if r := register(); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "invalid enrollment key") {
		t.Fatalf("register with a revoked key: %d %s", r.status, r.body)
	}
	if list := mustRun(t, dir, env, "", "--db", db, "enrollment-key", "list"); !strings.Contains(list, id) || strings.Contains(list, "\tno\n") {
		t.Fatalf("a revoked key lists as %q", list)
	}
	mustRun(t, dir, env, "", "--db", db, "enrollment-key", "delete", id)
	if r := runNmauthd(t, dir, env, "", "--db", db, "enrollment-key", "delete", id); r.code != 1 || !strings.Contains(r.stderr, "no enrollment key") {
		t.Fatalf("delete of a deleted key: exit %d, %q", r.code, r.stderr)
	}
}
