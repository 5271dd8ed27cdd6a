package netmaker

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gravitl/netmaker/models"
)

// caddyDomain is NM_DOMAIN in the tests: the API's site is api.nm.test,
// which the test's client dials on loopback.
const caddyDomain = "nm.test"

// caddyProxy is Debian's Caddy running deploy/Caddyfile, as shipped, with
// its certificates from Caddy's own local CA (the global form of
// `tls internal`) and its ports on loopback.
type caddyProxy struct {
	// URL is the API's site, https://api.nm.test:PORT.
	URL string
	// Client trusts Caddy's local CA and dials every name on loopback.
	Client *http.Client
	// CAFile is the local CA's root certificate, for SSL_CERT_FILE.
	CAFile string
	addr   string
}

// startCaddy runs deploy/Caddyfile with NMAUTHD_UPSTREAM and
// NETMAKER_UPSTREAM pointing at nmauthd and Netmaker (host:port) until the
// test ends. The shipped file is imported unchanged under global options
// that move Caddy's ports to loopback, give every site a certificate of
// Caddy's local CA, keep its state in a temporary directory and turn its
// admin endpoint off.
func startCaddy(t *testing.T, nmauthd, netmaker string) *caddyProxy {
	t.Helper()
	bin, err := exec.LookPath("caddy")
	if err != nil {
		t.Fatal("caddy is not installed (Debian: apt-get install caddy; .ci/deploy installs it)")
	}
	shipped, err := filepath.Abs("../../deploy/Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	httpsPort, httpPort := freePort(t), freePort(t)
	conf := filepath.Join(dir, "Caddyfile")
	global := fmt.Sprintf(`{
	admin off
	local_certs
	skip_install_trust
	http_port %s
	https_port %s
	default_bind 127.0.0.1
	storage file_system %s
}
import %s
`, httpPort, httpsPort, filepath.Join(dir, "data"), shipped)
	if err := os.WriteFile(conf, []byte(global), 0o600); err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	cmd := exec.Command(bin, "run", "--config", conf, "--adapter", "caddyfile")
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"XDG_DATA_HOME=" + filepath.Join(dir, "xdg"),
		"XDG_CONFIG_HOME=" + filepath.Join(dir, "xdg"),
		"NM_DOMAIN=" + caddyDomain,
		"NMAUTHD_UPSTREAM=" + nmauthd,
		"NETMAKER_UPSTREAM=" + netmaker,
	}
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("Caddy's log:\n%s", out.String())
		}
	})
	c := &caddyProxy{
		URL:    "https://api." + caddyDomain + ":" + httpsPort,
		CAFile: filepath.Join(dir, "data", "pki", "authorities", "local", "root.crt"),
		addr:   "127.0.0.1:" + httpsPort,
	}
	// Caddy writes its root certificate once it has made its CA; the
	// site's certificate follows.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			t.Fatalf("caddy exited:\n%s", out.String())
		default:
		}
		if c.Client == nil {
			if pem, err := os.ReadFile(c.CAFile); err == nil {
				c.Client = c.client(pem)
			}
		}
		if c.Client != nil {
			if resp, err := c.Client.Get(c.URL + "/api/server/status"); err == nil {
				resp.Body.Close()
				return c
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("caddy did not serve %s within 30 s:\n%s", c.URL, out.String())
	return nil
}

// client trusts only Caddy's local CA and connects to Caddy for any name.
func (c *caddyProxy) client(rootPEM []byte) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(rootPEM)
	var d net.Dialer
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool},
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return d.DialContext(ctx, network, c.addr)
			},
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// do sends a request through Caddy and returns the answer's status,
// headers and body.
func (c *caddyProxy) do(t *testing.T, method, path, bearer string, body any) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := c.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// call is do with the answer's body decoded into out, when out is not
// nil and the status is 2xx, as callJSON does.
func (c *caddyProxy) call(t *testing.T, method, path, bearer string, body, out any) (int, []byte) {
	t.Helper()
	st, _, b := c.do(t, method, path, bearer, body)
	if out != nil && st/100 == 2 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s through Caddy: decoding %s: %v", method, path, b, err)
		}
	}
	return st, b
}

// syncBuffer is a bytes.Buffer that a process's output may write to while
// the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// upstreamStub stands for Netmaker's server: it notes every request's
// path and marks its answers.
type upstreamStub struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func startUpstreamStub(t *testing.T) *upstreamStub {
	t.Helper()
	u := &upstreamStub{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen = append(u.seen, r.Method+" "+r.URL.Path)
		u.mu.Unlock()
		w.Header().Set("X-Upstream", "netmaker-stub")
		w.Write([]byte(`{"Code":200,"Message":"stub","Response":null}`))
	}))
	t.Cleanup(u.Close)
	return u
}

// reached reports whether the stub saw a request for method and path.
func (u *upstreamStub) reached(method, path string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, s := range u.seen {
		if s == method+" "+path {
			return true
		}
	}
	return false
}

// TestCaddyfileSplit runs the shipped Caddyfile with Debian's Caddy in
// front of nmauthd --wire netmaker and a stub of Netmaker's server: every
// route nmauthd serves in front of Netmaker, Netmaker's own login and TOTP
// routes among them, in any spelling Netmaker's router would resolve,
// reaches nmauthd and never the stub; every other path reaches the stub.
// A user and a host log in through it with nmauthd's accounts, and TOTP
// is turned on through it.
func TestCaddyfileSplit(t *testing.T) {
	s := startServer(t, "netmaker", "--trusted-proxy=127.0.0.1/32")
	stub := startUpstreamStub(t)
	c := startCaddy(t, strings.TrimPrefix(s.url, "http://"), strings.TrimPrefix(stub.URL, "http://"))

	toNmauthd := []string{
		"/api/users/adm/authenticate",
		"/api/hosts/adm/authenticate",
		"/api/users/alice/auth/init-totp",
		"/api/users/alice/auth/complete-totp",
		"/api/users/alice/auth/verify-totp",
		"/api/nodes/net-1/authenticate",
		"/api/nodes/adm/net-1/authenticate",
		"/api/v1/users/logout",
		"/api/oauth/login",
		"/api/oauth/callback",
		"/api/oauth/headless",
		"/api/oauth/confirm",
		"/api/users/alice/passkeys",
		"/api/users/adm/passkey/login/begin",
		// Spellings that Netmaker's router (gorilla/mux: decoded
		// path, cleaned by a redirect) could bring to its login and
		// TOTP handlers.
		"/API/Users/adm/Authenticate",
		"/api/users/adm/authenticat%65",
		"/api/users//adm/authenticate",
		"/api/users/adm/./authenticate",
		"/api/users/adm/authenticate/",
		"/api/hosts/adm/../adm/authenticate",
		"/api/users/alice/auth%2Fverify-totp",
		"/api/users/a%2Fb/auth/verify-totp",
	}
	for _, p := range toNmauthd {
		st, h, b := c.do(t, http.MethodPost, p, "", nil)
		if h.Get("X-Upstream") != "" || st == http.StatusBadGateway {
			t.Errorf("POST %s went to Netmaker (%d %s), want nmauthd", p, st, b)
		}
	}
	for _, p := range []string{
		"/api/networks",
		"/api/users/alice",
		"/api/users/alice/validate-identity",
		"/api/users",
		"/api/v1/host",
		"/api/hosts",
		"/api/v1/users/access_token",
		"/api/v1/host/register/token",
		"/api/server/status",
		"/",
	} {
		st, h, b := c.do(t, http.MethodGet, p, "", nil)
		if h.Get("X-Upstream") != "netmaker-stub" || !stub.reached(http.MethodGet, p) {
			t.Errorf("GET %s: %d %s, want Netmaker's", p, st, b)
		}
	}
	for _, p := range toNmauthd {
		if stub.reached(http.MethodPost, p) {
			t.Errorf("Netmaker's server saw POST %s", p)
		}
	}

	// Logins through the proxy are nmauthd's.
	st, _, b := c.do(t, http.MethodPost, "/api/users/adm/authenticate", "", models.UserAuthParams{UserName: "alice", Password: userPassword})
	userTok := authToken(t, s.success(st, b))
	if st, who := s.whoami(userTok); st != http.StatusOK || who != "user:alice" {
		t.Errorf("the user token from the proxy is %d %s at nmauthd", st, who)
	}
	st, _, b = c.do(t, http.MethodPost, "/api/hosts/adm/authenticate", "", models.AuthParams{ID: hostID, Password: hostPassword})
	hostTok := authToken(t, s.success(st, b))
	if st, who := s.whoami(hostTok); st != http.StatusOK || !strings.HasPrefix(who, "host:") {
		t.Errorf("the host token from the proxy is %d %s at nmauthd", st, who)
	}
	st, _, b = c.do(t, http.MethodPost, "/api/users/alice/auth/init-totp", userTok, nil)
	if st != http.StatusOK || !bytes.Contains(b, []byte("otp_auth_url")) {
		t.Errorf("init-totp through the proxy: %d %s", st, b)
	}
	// A wrong password through the proxy is nmauthd's 401.
	st, _, b = c.do(t, http.MethodPost, "/api/users/adm/authenticate", "", models.UserAuthParams{UserName: "alice", Password: "wrong"})
	if st != http.StatusUnauthorized {
		t.Errorf("a wrong password through the proxy: %d %s, want 401", st, b)
	}
}
