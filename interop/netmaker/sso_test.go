package netmaker

import (
	"bufio"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
)

// TestNmctlSSO runs nmctl context set --sso: nmctl opens the websocket
// wss://HOST/api/oauth/headless over TLS (a certificate of the test's,
// given to nmctl through SSL_CERT_FILE), prints the provider's URL, and
// once a browser has logged in there as the provider's user ann, takes the
// token nmauthd sends and uses it: nmauthd made the user ann at that first
// login (--sso-create-users). The provider is a real one, zitadel/oidc's op
// package with its example storage and login page.
func TestNmctlSSO(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	callback := "http://" + addr + "/api/oauth/callback"
	issuer := startProvider(t, "nmctl-sso", callback)
	s := startServer(t, "netmaker", "--addr="+addr, "--sso-issuer="+issuer, "--sso-client-id=nmctl-sso",
		"--sso-redirect-url="+callback, "--sso-create-users", "NMAUTH_SSO_CLIENT_SECRET=sso-client-secret")

	rc := &recorder{}
	front := httptest.NewTLSServer(rc.handler(t, s))
	defer front.Close()
	certFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: front.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	for _, args := range [][]string{{"context", "set", "sso", "--endpoint", front.URL, "--sso"}, {"context", "use", "sso"}} {
		if out, err := runNmctl(t, home, args...); err != nil {
			t.Fatalf("nmctl %v: %v\n%s", args, err, out)
		}
	}
	_, bin := binaries(t)
	cmd := exec.Command(bin, "network", "list")
	cmd.Env = append(os.Environ(), "HOME="+home, "SSL_CERT_FILE="+certFile)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var out strings.Builder
	visit := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			line := lines.Text()
			out.WriteString(line + "\n")
			if u := strings.TrimSpace(line); strings.HasPrefix(u, issuer) {
				visit <- u
			}
		}
		done <- cmd.Wait()
	}()
	select {
	case u := <-visit:
		loginAtProvider(t, issuer, u, "ann", "op-password-1")
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("nmctl printed no URL to visit:\n%s", out.String())
	}
	select {
	case err := <-done:
		if err != nil || !strings.Contains(out.String(), "net-1") {
			t.Fatalf("nmctl network list after the SSO login: %v\n%s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("nmctl did not finish after the login:\n%s", out.String())
	}
	cfg, err := os.ReadFile(filepath.Join(home, ".netmaker", "config.yml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`auth_token: (\S+)`).FindSubmatch(cfg)
	if m == nil {
		t.Fatalf("nmctl saved no token:\n%s", cfg)
	}
	if st, who := s.whoami(string(m[1])); st != http.StatusOK || who != "user:ann" {
		t.Fatalf("the token nmctl saved: %d %s", st, who)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.seen) == 0 || rc.seen[0].method != http.MethodGet || rc.seen[0].path != "/api/oauth/headless" {
		t.Fatalf("nmctl's first request through TLS was %v, want GET /api/oauth/headless", rc.seen)
	}
}

// startProvider starts zitadel/oidc's example provider over loopback with
// the user ann and a client for the callback; it returns the issuer. It is
// the sso module's ssotest.Start over again: importing that module here
// would raise the versions of Netmaker's dependencies that nmctl is built
// with (pgx, through the sso module's tests), which this module keeps.
func startProvider(t *testing.T, clientID, callback string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String()
	path := filepath.Join(t.TempDir(), "users.json")
	users := `{"id1": {"ID": "id1", "Username": "ann", "Password": "op-password-1", "Email": "ann@example.com", "EmailVerified": true, "PreferredLanguage": "en"}}`
	if err := os.WriteFile(path, []byte(users), 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := storage.StoreFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	storage.RegisterClients(storage.WebClient(clientID, "sso-client-secret", callback))
	srv := httptest.NewUnstartedServer(exampleop.SetupServer(issuer, storage.NewStorage(store), nil, false))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return issuer
}

var authRequestID = regexp.MustCompile(`name="id" value="([^"]+)"`)

// loginAtProvider is the browser: it follows start to the provider's login
// page, logs in there, and follows the redirects back to nmauthd's
// callback, which must answer 200.
func loginAtProvider(t *testing.T, issuer, start, user, password string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := client.Get(start)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := authRequestID.FindSubmatch(body)
	if m == nil {
		t.Fatalf("no login form at the provider: %.300s", body)
	}
	resp, err = client.PostForm(issuer+"/login/username", url.Values{"id": {string(m[1])}, "username": {user}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Request.URL.Path, "/api/oauth/callback") {
		t.Fatalf("the login ended at %s with %d: %.300s", resp.Request.URL, resp.StatusCode, body)
	}
}
