package main

import (
	"bytes"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"
)

// hostRequest sends GET path to d with the Host header host and the
// bearer, as a page that rebound its own name to 127.0.0.1 would.
func hostRequest(t *testing.T, d *daemon, host, path, bearer string) reply {
	t.Helper()
	req, err := http.NewRequest("GET", d.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	return doRequest(t, req)
}

// TestDevAnswersLoopbackHostsOnly: under --dev, whose well-known master
// key reads the admin API, a request naming another host (a DNS-rebound
// name, another port, another loopback address) answers 421 and nothing
// of the admin API; localhost and the address nmauthd listens on, with
// its port, are answered.
func TestDevAnswersLoopbackHostsOnly(t *testing.T) {
	dir := t.TempDir()
	d := startDaemon(t, dir, baseEnv(), "--dev", "--db", filepath.Join(dir, "nmauth.db"))
	key := devVariables(t, d.waitStdout("DEMO_MASTER_KEY="))["DEMO_MASTER_KEY"]
	u, err := url.Parse(d.url)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	for _, host := range []string{"localhost:" + port, "LocalHost:" + port, "127.0.0.1:" + port} {
		for _, path := range []string{"/api/admin/users", "/", "/healthz"} {
			if r := hostRequest(t, d, host, path, key); r.status != http.StatusOK {
				t.Errorf("Host %s, GET %s: %d, want 200; %s", host, path, r.status, r.body)
			}
		}
	}
	for _, host := range []string{"attacker.example:" + port, "attacker.example", "127.0.0.1.attacker.example:" + port,
		"localhost", "127.0.0.1", "localhost:1", "127.0.0.1:1", "127.0.0.2:" + port, "[::1]:" + port,
		"localhost.:" + port, "0.0.0.0:" + port, "localhost:" + port + ".attacker.example"} {
		for _, path := range []string{"/api/admin/users", "/", "/api/whoami"} {
			r := hostRequest(t, d, host, path, key)
			if r.status != http.StatusMisdirectedRequest || bytes.Contains(r.body, []byte(demoUser)) {
				t.Errorf("Host %s, GET %s: %d %s; want 421 and no account", host, path, r.status, r.body)
			}
		}
	}
}

// TestDemoPageOnlyWhenAsked: without --dev the demo page and its assets
// answer 404 unless --demo-page asks for them.
func TestDemoPageOnlyWhenAsked(t *testing.T) {
	env := baseEnv("MASTER_KEY=" + testMasterKey)
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, http.StatusNotFound},
		{[]string{"--demo-page"}, http.StatusOK},
	} {
		dir := t.TempDir()
		d := startDaemon(t, dir, env, append([]string{"--db", filepath.Join(dir, "nmauth.db")}, tc.args...)...)
		for _, path := range []string{"/", "/assets/app.js", "/assets/style.css"} {
			r := fetchPath(t, "GET", d.url+path)
			if r.status != tc.want || (tc.want != http.StatusOK && bytes.Contains(r.body, []byte("<!doctype html>"))) {
				t.Errorf("serve %v: GET %s answered %d, want %d", tc.args, path, r.status, tc.want)
			}
		}
		d.stop()
	}
}
