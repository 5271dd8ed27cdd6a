package netmaker

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/gravitl/netmaker/models"
)

// TestCaddyfileFrontsNetmaker runs the shipped Caddyfile with Debian's
// Caddy in front of nmauthd --wire netmaker and Netmaker v1.4.0's own
// server. Netmaker's password is right at Netmaker, yet a login sent
// through the proxy, in any spelling of Netmaker's login route, never
// comes back with a token Netmaker accepts: it reaches nmauthd, which does
// not know Netmaker's admin. The rest of the API is Netmaker's through the
// proxy: the real nmctl lists networks with the master key, a host
// registers with an enrollment key, and a host pulls its state with the
// token Netmaker gave it.
func TestCaddyfileFrontsNetmaker(t *testing.T) {
	nm := startNetmaker(t, "sqlite")
	a := seedNetmaker(nm)
	s := startServer(t, "netmaker", "--trusted-proxy=127.0.0.1/32")
	c := startCaddy(t, strings.TrimPrefix(s.url, "http://"), strings.TrimPrefix(nm.URL, "http://"))

	accepted := func(tok string) bool {
		st, _ := nm.call(http.MethodGet, "/api/networks", tok, nil, nil)
		return st == http.StatusOK
	}
	// The control: at Netmaker itself the password logs in.
	if !accepted(nm.Login(a.Admin, a.AdminPassword)) {
		t.Fatal("Netmaker refuses the token it gave its admin")
	}
	for _, p := range []string{
		"/api/users/adm/authenticate",
		"/API/Users/adm/Authenticate",
		"/api/users/adm/authenticat%65",
		"/api/users//adm/authenticate",
		"/api/users/adm/./authenticate",
		"/api/users/adm/authenticate/",
	} {
		// A redirect to the cleaned path (Go's mux answers one for
		// "//" and "./") is followed with the same POST, as a client
		// that follows it would, through the proxy again.
		path := p
		var st int
		var b []byte
		for hop := 0; ; hop++ {
			var h http.Header
			st, h, b = c.do(t, http.MethodPost, path, "", models.UserAuthParams{UserName: a.Admin, Password: a.AdminPassword})
			loc := h.Get("Location")
			if loc == "" || hop == 3 {
				break
			}
			u, err := url.Parse(loc)
			if err != nil {
				t.Fatalf("POST %s: Location %q", path, loc)
			}
			path = u.EscapedPath()
		}
		var r models.SuccessResponse
		if st == http.StatusOK && json.Unmarshal(b, &r) == nil {
			if m, ok := r.Response.(map[string]any); ok {
				if tok, _ := m["AuthToken"].(string); tok != "" && accepted(tok) {
					t.Errorf("POST %s through the proxy reached Netmaker's login: its token is Netmaker's", p)
				}
			}
		}
		// nmauthd answers 401 for a user it does not know, and 404 in
		// its envelope for a spelling that is not its route.
		if st != http.StatusUnauthorized && st != http.StatusNotFound {
			t.Errorf("POST %s through the proxy: %d %s, want nmauthd's 401 or 404", p, st, b)
		}
	}

	// nmctl through the proxy, with the master key: Netmaker's routes.
	env := c.nmctlEnvironment(t, t.TempDir())
	for _, args := range [][]string{
		{"context", "set", "proxy", "--endpoint", c.URL, "--master_key", nm.MasterKey},
		{"context", "use", "proxy"},
		{"network", "list"},
	} {
		out, err := nmctlEnv(t, env, args...)
		if err != nil {
			t.Fatalf("nmctl %v through the proxy: %v\n%s", args, err, out)
		}
		if args[0] == "network" && !strings.Contains(out, a.Network) {
			t.Fatalf("nmctl network list through the proxy:\n%s", out)
		}
	}

	// Host registration and the host's pull are Netmaker's.
	id := uuid.New()
	traffic := make([]byte, 32)
	st, _, b := c.do(t, http.MethodPost, "/api/v1/host/register/"+a.EnrollmentToken, "", models.Host{
		ID: id, Name: "via-proxy", HostPass: "host-password-via-proxy", Version: "v1.4.0", OS: "linux",
		MacAddress: net.HardwareAddr{0x02, 0, 0x5e, 1, 2, 3}, TrafficKeyPublic: traffic, ListenPort: 51821,
	})
	if st != http.StatusOK {
		t.Fatalf("registering a host through the proxy: %d %s", st, b)
	}
	tok := nm.HostLogin(id, "host-password-via-proxy", net.HardwareAddr{0x02, 0, 0x5e, 1, 2, 3})
	if st, _, b := c.do(t, http.MethodGet, "/api/v1/host", tok, nil); st != http.StatusOK || !strings.Contains(string(b), id.String()) {
		t.Fatalf("GET /api/v1/host through the proxy with Netmaker's host token: %d %s", st, b)
	}
}

// nmctlEnv runs nmctl with extra environment settings.
func nmctlEnv(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	_, bin := binaries(t)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// nmctlEnvironment is the environment of an nmctl that reaches Netmaker's
// API through Caddy, at c.URL: home as its HOME (where it keeps its
// contexts), Caddy's local CA as the one it trusts, and a proxy that
// tunnels every connection to Caddy's port.
func (c *caddyProxy) nmctlEnvironment(t *testing.T, home string) []string {
	t.Helper()
	return []string{"HOME=" + home, "SSL_CERT_FILE=" + c.CAFile, "HTTPS_PROXY=" + startConnectProxy(t, c.addr), "NO_PROXY="}
}

// startConnectProxy is an HTTPS proxy for clients that cannot be given a
// dialer (nmctl): every CONNECT, whatever host it names, is tunnelled to
// addr, Caddy's port, so that TLS runs end to end with the name the client
// asked for. It returns the proxy's URL, for HTTPS_PROXY.
func startConnectProxy(t *testing.T, addr string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		up, err := net.Dial("tcp", addr)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		hj, ok := w.(http.Hijacker)
		if !ok {
			up.Close()
			http.Error(w, "no hijacking", http.StatusInternalServerError)
			return
		}
		down, buf, err := hj.Hijack()
		if err != nil {
			up.Close()
			return
		}
		io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n")
		go func() {
			io.Copy(up, buf)
			up.Close()
		}()
		io.Copy(down, up)
		down.Close()
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
