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
	"sync"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
)

// TestNmctlSSO runs nmctl context set --sso: nmctl opens the websocket
// wss://HOST/api/oauth/headless over TLS (a certificate of the test's,
// given to nmctl through SSL_CERT_FILE) and prints the provider's URL and
// the login's code. A browser logs in there as the provider's user ann;
// nmauthd's callback then shows the same code and asks to confirm, and
// once confirmed nmctl takes the token nmauthd sends and uses it: nmauthd
// made the user ann at that first login (--sso-create-users). A second
// nmctl, whose login is never confirmed, gets no token. The provider is a
// real one, zitadel/oidc's op package with its example storage and login
// page.
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
	waitSSO(t, s)

	rc := &recorder{}
	front := httptest.NewTLSServer(rc.handler(t, s))
	defer front.Close()
	certFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: front.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}

	home := t.TempDir()
	n := startNmctlSSO(t, home, front.URL, certFile, issuer)
	page := loginAtProvider(t, issuer, n.visit, "ann", "op-password-1")
	if page.code != n.code {
		t.Fatalf("the confirmation page shows the code %q, nmctl printed %q:\n%s", page.code, n.code, n.output())
	}
	page.answer(t, "confirm")
	if err := n.wait(t); err != nil || !strings.Contains(n.output(), "net-1") {
		t.Fatalf("nmctl network list after the SSO login: %v\n%s", err, n.output())
	}
	if st, who := s.whoami(savedToken(t, home)); st != http.StatusOK || who != "user:ann" {
		t.Fatalf("the token nmctl saved: %d %s", st, who)
	}
	rc.mu.Lock()
	if len(rc.seen) == 0 || rc.seen[0].method != http.MethodGet || rc.seen[0].path != "/api/oauth/headless" {
		t.Fatalf("nmctl's first request through TLS was %v, want GET /api/oauth/headless", rc.seen)
	}
	rc.mu.Unlock()

	// Signed in at the provider, never confirmed: nmctl waits without a
	// token until it is interrupted, and then has none to use.
	home = t.TempDir()
	n = startNmctlSSO(t, home, front.URL, certFile, issuer)
	loginAtProvider(t, issuer, n.visit, "ann", "op-password-1")
	select {
	case err := <-n.done:
		t.Fatalf("nmctl ended though nobody confirmed its login: %v\n%s", err, n.output())
	case <-time.After(3 * time.Second): // ten of the server's polls
	}
	n.cmd.Process.Signal(os.Interrupt)
	if err := n.wait(t); err == nil || strings.Contains(n.output(), "net-1") {
		t.Fatalf("nmctl without a confirmed login: %v\n%s", err, n.output())
	}
	if st, _ := s.whoami(savedToken(t, home)); st == http.StatusOK {
		t.Fatal("nmctl saved a token that logs in, though nobody confirmed the login")
	}
}

// waitSSO waits until nmauthd has read the provider's discovery, which it
// does in the background after it starts.
func waitSSO(t *testing.T, s *server) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(s.url + "/api/oauth/login")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("nmauthd's SSO routes answer 503 a minute after the start")
		}
	}
}

// nmctlRun is a running "nmctl network list" that logs in by SSO: the URL
// and the code it printed, and its output so far.
type nmctlRun struct {
	cmd         *exec.Cmd
	visit, code string
	done        chan error
	mu          sync.Mutex
	out         strings.Builder
}

func (n *nmctlRun) output() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.out.String()
}

// wait waits for nmctl's end and returns its error.
func (n *nmctlRun) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-n.done:
		return err
	case <-time.After(30 * time.Second):
		n.cmd.Process.Kill()
		t.Fatalf("nmctl did not finish:\n%s", n.output())
		return nil
	}
}

// nmctlCode is the line of nmauthd's first message that nmctl prints after
// the URL.
var nmctlCode = regexp.MustCompile(`^\s*and confirm there the code ([B-Z]{4}-[B-Z]{4})\s*$`)

// startNmctlSSO sets nmctl's context in home to log in at endpoint by SSO,
// runs nmctl network list, and returns once nmctl has printed the URL to
// visit and the code.
func startNmctlSSO(t *testing.T, home, endpoint, certFile, issuer string) *nmctlRun {
	t.Helper()
	for _, args := range [][]string{{"context", "set", "sso", "--endpoint", endpoint, "--sso"}, {"context", "use", "sso"}} {
		if out, err := runNmctl(t, home, args...); err != nil {
			t.Fatalf("nmctl %v: %v\n%s", args, err, out)
		}
	}
	_, bin := binaries(t)
	n := &nmctlRun{cmd: exec.Command(bin, "network", "list"), done: make(chan error, 1)}
	n.cmd.Env = append(os.Environ(), "HOME="+home, "SSL_CERT_FILE="+certFile)
	stdout, err := n.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	n.cmd.Stderr = n.cmd.Stdout
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.cmd.Process.Kill() })
	printed := make(chan struct{})
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			line := lines.Text()
			n.mu.Lock()
			n.out.WriteString(line + "\n")
			if u := strings.TrimSpace(line); strings.HasPrefix(u, issuer) {
				n.visit = u
			} else if m := nmctlCode.FindStringSubmatch(line); m != nil && n.visit != "" && n.code == "" {
				n.code = m[1]
				close(printed)
			}
			n.mu.Unlock()
		}
		n.done <- n.cmd.Wait()
	}()
	select {
	case <-printed:
		n.mu.Lock()
		defer n.mu.Unlock()
		return n
	case <-time.After(30 * time.Second):
		n.cmd.Process.Kill()
		t.Fatalf("nmctl printed no URL and code to visit:\n%s", n.output())
		return nil
	}
}

// savedToken is the token nmctl saved in home's config, "" for none.
func savedToken(t *testing.T, home string) string {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join(home, ".netmaker", "config.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`auth_token: (\S+)`).FindSubmatch(cfg); m != nil {
		return string(m[1])
	}
	return ""
}

// startProvider starts zitadel/oidc's example provider over loopback with
// the user ann and a client for the callback; it returns the issuer. It is
// the sso module's ssotest.Start over again: importing that module here
// would raise the versions of Netmaker's dependencies that nmctl is built
// with (pgx, through the sso module's tests), which this module keeps.
func startProvider(t *testing.T, clientID, callback string) string {
	t.Helper()
	return startProviderWith(t, clientID, callback, `{"id1": {"ID": "id1", "Username": "ann", "Password": "op-password-1", "Email": "ann@example.com", "EmailVerified": true, "PreferredLanguage": "en"}}`)
}

// startProviderWith starts the provider with the users of usersJSON, in
// the example storage's form.
func startProviderWith(t *testing.T, clientID, callback, users string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String()
	path := filepath.Join(t.TempDir(), "users.json")
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

var (
	authRequestID = regexp.MustCompile(`name="id" value="([^"]+)"`)
	pageCode      = regexp.MustCompile(`<p id="code"[^>]*>([^<]+)</p>`)
	pageToken     = regexp.MustCompile(`name="token" value="([^"]+)"`)
)

// confirmation is nmauthd's page that asks the person at the browser to
// confirm a headless login: the code it shows, and its form.
type confirmation struct {
	client      *http.Client
	action      string
	code, token string
}

// answer posts the page's form with answer, confirm or refuse, which
// nmauthd must take.
func (c confirmation) answer(t *testing.T, answer string) {
	t.Helper()
	resp, err := c.client.PostForm(c.action, url.Values{"token": {c.token}, "answer": {answer}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the answer %s: %d %s", answer, resp.StatusCode, body)
	}
}

// loginAtProvider is the browser: it follows start to the provider's login
// page, logs in there, and follows the redirects back to nmauthd's
// callback, which must answer its confirmation page.
func loginAtProvider(t *testing.T, issuer, start, user, password string) confirmation {
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
	code, token := pageCode.FindSubmatch(body), pageToken.FindSubmatch(body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Request.URL.Path, "/api/oauth/callback") || code == nil || token == nil {
		t.Fatalf("the login ended at %s with %d: %.300s", resp.Request.URL, resp.StatusCode, body)
	}
	action, _ := resp.Request.URL.Parse("confirm")
	return confirmation{client: client, action: action.String(), code: string(code[1]), token: string(token[1])}
}
