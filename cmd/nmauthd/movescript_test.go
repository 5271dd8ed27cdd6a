package main

import (
	"database/sql"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestMoveFromNetmakerScript runs testdata/move-from-netmaker.sh, the
// commands of docs/moving-from-netmaker.md, as an operator does: nmauthd
// on PATH, Netmaker's database and master key given, in an empty
// directory. It must import the accounts, serve, list them, and accept
// the master key.
func TestMoveFromNetmakerScript(t *testing.T) {
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			requireCI(t, "the move script's test needs "+tool)
		}
	}
	bin := nmauthdBinary(t)
	dir := t.TempDir()
	src := filepath.Join(t.TempDir(), "netmaker.db")
	db, err := sql.Open("sqlite", src)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"users", "hosts", "nodes", "server_settings"} {
		if _, err := db.Exec("CREATE TABLE " + table + " (key TEXT NOT NULL UNIQUE PRIMARY KEY, value TEXT)"); err != nil {
			t.Fatal(err)
		}
	}
	// The records Netmaker writes, without those the import skips.
	for _, r := range netmakerRecords(t) {
		if strings.Contains(r[0]+r[1], "not-a-uuid") || strings.Contains(r[1], "without-host") || map[string]bool{"eve": true, "frank": true, "grace": true}[r[1]] {
			continue
		}
		if _, err := db.Exec("INSERT INTO "+r[0]+" (key, value) VALUES (?, ?)", r[1], r[2]); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	script, err := filepath.Abs("testdata/move-from-netmaker.sh")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	cmd := exec.Command("bash", script)
	cmd.Dir = dir
	cmd.Env = baseEnv("PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"NETMAKER_DB="+src, "MASTER_KEY="+testMasterKey, "NMAUTHD_ADDR="+addr)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash testdata/move-from-netmaker.sh: %v\n%s", err, out)
	}
	for _, want := range []string{"users: 4 added", "hosts: 1 added", "memberships: 1 added", "alice", importHostID, `{"kind":"master"}`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the script's output lacks %q:\n%s", want, out)
		}
	}
}
