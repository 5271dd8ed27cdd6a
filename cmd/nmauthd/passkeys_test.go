package main

import (
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRelyingParty takes the relying party from the flags, or with --dev
// localhost on the listening port, and turns passkeys off without either.
func TestRelyingParty(t *testing.T) {
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8081}
	for _, c := range []struct {
		name    string
		o       options
		rpID    string
		origins []string
		on      bool
	}{
		{"off", options{}, "", nil, false},
		{"an id", options{passkeyRPID: "example.com"}, "example.com", []string{"https://example.com"}, true},
		{"an id and origins", options{passkeyRPID: "example.com", passkeyOrigins: stringList{"https://a.example.com", "https://b.example.com"}},
			"example.com", []string{"https://a.example.com", "https://b.example.com"}, true},
		{"--dev", options{dev: true}, "localhost", []string{"http://localhost:8081"}, true},
		{"--dev and an id", options{dev: true, passkeyRPID: "example.com"}, "example.com", []string{"https://example.com"}, true},
	} {
		rpID, origins, on, err := relyingParty(&c.o, addr)
		if err != nil || rpID != c.rpID || !slices.Equal(origins, c.origins) || on != c.on {
			t.Errorf("%s: %q %q %v %v, want %q %q %v", c.name, rpID, origins, on, err, c.rpID, c.origins, c.on)
		}
	}
	if _, _, _, err := relyingParty(&options{passkeyOrigins: stringList{"https://example.com"}}, addr); err == nil {
		t.Error("--passkey-origin without --passkey-rp-id was accepted")
	}
}

// TestPasskeyCommandErrors refuses, with one line, a relying party that
// browsers would refuse and the passkeys of a user that does not exist.
func TestPasskeyCommandErrors(t *testing.T) {
	dir := t.TempDir()
	env := baseEnv("MASTER_KEY=" + testMasterKey)
	db := filepath.Join(dir, "nmauth.db")
	seed(t, dir, env, db)
	for _, args := range [][]string{
		{"serve", "--addr", "127.0.0.1:0", "--db", db, "--passkey-rp-id", "192.0.2.1"},
		{"serve", "--addr", "127.0.0.1:0", "--db", db, "--passkey-rp-id", "example.com", "--passkey-origin", "http://example.com"},
	} {
		r := runNmauthd(t, dir, env, "", args...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		last := lines[len(lines)-1]
		if r.code != 1 || !strings.Contains(last, "--passkey-rp-id") {
			t.Errorf("nmauthd %s: exit %d, last line %q; want 1 and the flags named", strings.Join(args, " "), r.code, last)
		}
	}
	r := runNmauthd(t, dir, env, "", "--db", db, "user", "passkeys", "nobody")
	if r.code != 1 || strings.TrimSpace(r.stderr) != `nmauthd: no user "nobody"` {
		t.Errorf("user passkeys nobody: exit %d, %q", r.code, r.stderr)
	}
	out := mustRun(t, dir, env, "", "--db", db, "user", "passkeys", "alice")
	if strings.Join(strings.Fields(out), " ") != "NAME CREATED LAST USED SIGN COUNT DISCOVERABLE ID" {
		t.Errorf("user passkeys of a user without one printed %q", out)
	}
	out = mustRun(t, dir, env, "", "--db", db, "user", "passkeys-reset", "alice")
	if !strings.Contains(out, `user "alice": 0 passkeys removed`) {
		t.Errorf("user passkeys-reset printed %q", out)
	}
}
