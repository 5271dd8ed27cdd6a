package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nmauth/nmauth"
)

const (
	nodeHost  = "8d0f3b2a-5c6e-4f71-9a3b-2c4d6e8f0a11"
	otherHost = "8d0f3b2a-5c6e-4f71-9a3b-2c4d6e8f0a12"
)

// netmakerEnvelope is the envelope of the Netmaker profile as a client
// outside the library reads it.
type netmakerEnvelope struct {
	Code     int
	Message  string
	Response map[string]any
}

// nodeWalk adds two hosts, one a member of net-1 by --network and named
// by its UUID in upper case, serves --wire netmaker on db, and requires
// node login, by either spelling of the UUID, to hand out a node token to
// the member only, on both node routes.
func nodeWalk(t *testing.T, dir string, env []string, db string) {
	t.Helper()
	provideSecretFile(t, env, db)
	mustRun(t, dir, env, "host-password-1", "host", "add", strings.ToUpper(nodeHost), "--network", "net-1", "--network", "net-2", "--db", db)
	mustRun(t, dir, env, "host-password-2", "host", "add", otherHost, "--db", db)
	d := startDaemon(t, dir, env, "--db", db, "--wire", "netmaker")
	if r := d.call("GET", "/openapi.yaml", "", nil); string(r.body) != string(openAPI(nmauth.WireNetmaker)) {
		t.Errorf("nmauthd serve --wire netmaker: GET /openapi.yaml is not the Netmaker document: %d, %d bytes", r.status, len(r.body))
	}
	for i, path := range []string{"/api/nodes/net-1/authenticate", "/api/nodes/adm/net-2/authenticate"} {
		id := nodeHost
		if i == 1 {
			id = strings.ToUpper(nodeHost)
		}
		r := d.call("POST", path, "", map[string]string{"id": id, "password": "host-password-1"})
		env := decode[netmakerEnvelope](t, r, http.StatusOK)
		tok, _ := env.Response["AuthToken"].(string)
		if env.Code != 200 || env.Response["ID"] != nodeHost {
			t.Fatalf("%s: %s", path, r.body)
		}
		if p := d.whoami(tok); p.Kind != "node" || p.Name != nodeHost {
			t.Fatalf("%s: node token is %+v", path, p)
		}
	}
	r := d.call("POST", "/api/nodes/net-3/authenticate", "", map[string]string{"id": nodeHost, "password": "host-password-1"})
	if r.status != http.StatusForbidden {
		t.Errorf("node login to a network the host is not in: %d %s", r.status, r.body)
	}
	r = d.call("POST", "/api/nodes/net-1/authenticate", "", map[string]string{"id": otherHost, "password": "host-password-2"})
	if r.status != http.StatusForbidden {
		t.Errorf("node login of a host in no network: %d %s", r.status, r.body)
	}
	r = d.call("POST", "/api/hosts/adm/authenticate", "", map[string]string{"id": strings.ToUpper(nodeHost), "password": "host-password-1"})
	if env := decode[netmakerEnvelope](t, r, http.StatusOK); env.Response["ID"] != nodeHost {
		t.Errorf("host login by an upper-case UUID: %s", r.body)
	}
	d.stop()
}

func TestNodeLoginSQLite(t *testing.T) {
	dir := t.TempDir()
	nodeWalk(t, dir, baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SECRET="+newRootSecret(t)), filepath.Join(dir, "nmauth.db"))
}

func TestNodeLoginPostgres(t *testing.T) {
	db := postgresDSN(t)
	nodeWalk(t, t.TempDir(), baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SECRET="+newRootSecret(t)), db)
}

// TestCORSPreflight asks a running nmauthd what a browser asks before a
// web UI on another origin logs in.
func TestCORSPreflight(t *testing.T) {
	dir := t.TempDir()
	env := baseEnv("MASTER_KEY=" + testMasterKey)
	d := startDaemon(t, dir, env, "--db", filepath.Join(dir, "nmauth.db"),
		"--cors-origin", "https://ui.example.test", "--cors-origin", "https://other.example.test")
	preflight := func(origin, headers string) http.Header {
		req, err := http.NewRequest(http.MethodOptions, d.url+"/api/users/adm/authenticate", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", headers)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header
	}
	h := preflight("https://ui.example.test", "authorization,content-type,from-ui,x-application-name")
	if h.Get("Access-Control-Allow-Origin") != "https://ui.example.test" {
		t.Errorf("allowed origin refused: %v", h)
	}
	allowed := strings.ToLower(h.Get("Access-Control-Allow-Headers"))
	for _, want := range []string{"authorization", "content-type", "from-ui", "x-application-name"} {
		if !strings.Contains(allowed, want) {
			t.Errorf("header %s not allowed: %q", want, allowed)
		}
	}
	if h := preflight("https://evil.example.test", "content-type"); h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("unknown origin allowed: %v", h)
	}
	req, _ := http.NewRequest(http.MethodPost, d.url+"/api/users/adm/authenticate", strings.NewReader(`{"username":"nobody","password":"not a password"}`))
	req.Header.Set("Origin", "https://other.example.test")
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Access-Control-Allow-Origin") != "https://other.example.test" || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("cross-origin login: %d %v", resp.StatusCode, resp.Header)
	}
	d.stop()
}

func TestWireFlag(t *testing.T) {
	dir := t.TempDir()
	r := runNmauthd(t, dir, baseEnv("MASTER_KEY="+testMasterKey), "", "serve", "--wire", "gravitl", "--db", filepath.Join(dir, "x.db"))
	if r.code != exitFail || !strings.Contains(r.stderr, "neither spec nor netmaker") {
		t.Errorf("serve --wire gravitl: exit %d, %s", r.code, r.stderr)
	}
	r = runNmauthd(t, dir, baseEnv(), "pw-pw-pw-pw", "host", "add", nodeHost, "--wire", "netmaker", "--db", filepath.Join(dir, "x.db"))
	if r.code != exitUsage {
		t.Errorf("host add --wire: exit %d, want a usage error", r.code)
	}
}
