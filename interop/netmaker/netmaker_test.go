package netmaker

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gravitl/netmaker/models"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

const (
	masterKey    = "interop-master-key-0123456789abcdefghijkl"
	userPassword = "correct horse battery"
	hostID       = "0b7e4c2d-1f3a-4b5c-8d6e-7f8091a2b3c4"
	hostPassword = "host-password-1"
)

var (
	buildOnce      sync.Once
	binDir         string
	nmauthd, nmctl string
	buildErr       error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binaries builds nmauthd from this tree and nmctl from Netmaker's own
// source at the version go.mod requires, once per run.
func binaries(t *testing.T) (string, string) {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "nmauth-interop-"); buildErr != nil {
			return
		}
		nmauthd, nmctl = filepath.Join(binDir, "nmauthd"), filepath.Join(binDir, "nmctl")
		for _, b := range []struct{ dir, out, pkg string }{
			{"../..", nmauthd, "./cmd/nmauthd"},
			{".", nmctl, "github.com/gravitl/netmaker/cli"},
		} {
			cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
			cmd.Dir = b.dir
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = &buildError{b.pkg, err, out}
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return nmauthd, nmctl
}

type buildError struct {
	pkg string
	err error
	out []byte
}

func (e *buildError) Error() string {
	return "go build " + e.pkg + ": " + e.err.Error() + "\n" + string(e.out)
}

// server is a running nmauthd serve with one user and one host in net-1.
type server struct {
	t   *testing.T
	url string
	// dir is the directory nmauthd runs in, which holds a SQLite
	// database.
	dir string
}

// startServer seeds a fresh database and serves it in profile on a free
// loopback port until the test ends. extra holds more flags of serve, each
// as --name=value, and NAME=VALUE settings of its environment.
func startServer(t *testing.T, profile string, extra ...string) *server {
	t.Helper()
	bin, _ := binaries(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "nmauth.db")
	// The admin commands that seed the database never make a root secret,
	// so the test gives one, as an operator gives NMAUTH_SECRET.
	secret := make([]byte, 32)
	rand.Read(secret)
	env := append(os.Environ(), "MASTER_KEY="+masterKey, "NMAUTH_SECRET="+hex.EncodeToString(secret), "NMAUTH_ENV=")
	run := func(stdin string, args ...string) {
		cmd := exec.Command(bin, append(args, "--db", db)...)
		cmd.Dir, cmd.Env, cmd.Stdin = dir, env, strings.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("nmauthd %v: %v\n%s", args, err, out)
		}
	}
	run(userPassword, "user", "add", "alice")
	run(hostPassword, "host", "add", hostID, "--network", "net-1")
	return serveDB(t, dir, db, env, profile, extra...)
}

// serveDB serves the database db in profile, with env as nmauthd's
// environment, as startServer does.
func serveDB(t *testing.T, dir, db string, env []string, profile string, extra ...string) *server {
	t.Helper()
	bin, _ := binaries(t)
	args := []string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--log-json", "--wire", profile}
	for _, x := range extra {
		if strings.HasPrefix(x, "-") {
			args = append(args, x)
		} else {
			env = append(env, x)
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		var rec struct{ Msg, Addr string }
		if json.Unmarshal(lines.Bytes(), &rec) == nil && rec.Msg == "listening" {
			go io.Copy(io.Discard, stderr)
			return &server{t: t, url: "http://" + rec.Addr, dir: dir}
		}
	}
	t.Fatal("nmauthd exited before it listened")
	return nil
}

// post sends a JSON body with an optional bearer and returns the status
// and the body.
func (s *server) post(path, bearer string, body any) (int, []byte) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(http.MethodPost, s.url+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// whoami asks nmauthd whom a bearer credential names.
func (s *server) whoami(bearer string) (int, string) {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.url+"/api/whoami", nil)
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var p struct{ Kind, Name string }
	json.NewDecoder(resp.Body).Decode(&p)
	return resp.StatusCode, p.Kind + ":" + p.Name
}

// code computes a TOTP code of otpauthURL's secret for the step at, with
// pquerna/otp rather than the code under test.
func code(t *testing.T, otpauthURL string, at time.Time) string {
	t.Helper()
	u, err := url.Parse(otpauthURL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := totp.GenerateCodeCustom(u.Query().Get("secret"), at, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// success decodes a body into Netmaker's own SuccessResponse, as nmctl
// and netclient do.
func (s *server) success(status int, body []byte) models.SuccessResponse {
	t := s.t
	t.Helper()
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	var r models.SuccessResponse
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("%s into models.SuccessResponse: %v", body, err)
	}
	if r.Code != http.StatusOK || r.Message == "" {
		t.Fatalf("envelope %+v from %s", r, body)
	}
	return r
}

// authToken reads the token the way netclient and nmctl do:
// Response.(map[string]any)["AuthToken"].(string), which panics on any
// other key; here the panic is a test failure instead.
func authToken(t *testing.T, r models.SuccessResponse) (tok string) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("the clients' read of AuthToken panics: %v (Response %#v)", p, r.Response)
		}
	}()
	return r.Response.(map[string]any)["AuthToken"].(string)
}

// into decodes the Response of an envelope into one of Netmaker's types.
func into[T any](t *testing.T, r models.SuccessResponse) T {
	t.Helper()
	b, _ := json.Marshal(r.Response)
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("Response %s: %v", b, err)
	}
	return v
}

// TestNetmakerProfileWithNetmakerModels walks every route of the
// Netmaker profile and reads each answer with Netmaker's models, the way
// its clients read them.
func TestNetmakerProfileWithNetmakerModels(t *testing.T) {
	s := startServer(t, "netmaker")

	host := s.success(s.post("/api/hosts/adm/authenticate", "", models.AuthParams{ID: hostID, Password: hostPassword}))
	if got := into[models.SuccessfulLoginResponse](t, host); got.ID != hostID {
		t.Errorf("host login ID %q", got.ID)
	}
	if st, who := s.whoami(authToken(t, host)); st != 200 || who != "host:"+hostID {
		t.Errorf("host token: %d %s", st, who)
	}
	for _, path := range []string{"/api/nodes/adm/net-1/authenticate", "/api/nodes/net-1/authenticate"} {
		node := s.success(s.post(path, "", models.AuthParams{ID: hostID, Password: hostPassword}))
		if st, who := s.whoami(authToken(t, node)); st != 200 || who != "node:"+hostID {
			t.Errorf("%s: node token: %d %s", path, st, who)
		}
	}

	login := s.success(s.post("/api/users/adm/authenticate", "", models.UserAuthParams{UserName: "alice", Password: userPassword}))
	user := authToken(t, login)
	if got := into[models.SuccessfulUserLoginResponse](t, login); got.UserName != "alice" || got.AuthToken != user {
		t.Errorf("user login %+v", got)
	}
	// Netmaker's own API tests post a whole models.User: keys beside
	// username and password are ignored, none taken for a misspelling.
	s.success(s.post("/api/users/adm/authenticate", "", models.User{UserName: "alice", Password: userPassword}))

	init := s.success(s.post("/api/users/alice/auth/init-totp", user, nil))
	e := into[models.TOTPInitiateResponse](t, init)
	if e.OTPAuthURL == "" || e.OTPAuthURLSignature == "" || !strings.HasPrefix(e.QRCode, "data:image/png;base64,") {
		t.Fatalf("init-totp %+v", e)
	}
	now := time.Now()
	s.success(s.post("/api/users/alice/auth/complete-totp", user, models.UserTOTPVerificationParams{
		OTPAuthURL: e.OTPAuthURL, OTPAuthURLSignature: e.OTPAuthURLSignature, TOTP: code(t, e.OTPAuthURL, now),
	}))

	needsTOTP := s.success(s.post("/api/users/adm/authenticate", "", models.UserAuthParams{UserName: "alice", Password: userPassword}))
	partial := into[models.PartialUserLoginResponse](t, needsTOTP)
	if partial.UserName != "alice" || partial.PreAuthToken == "" {
		t.Fatalf("login with TOTP on: %+v", partial)
	}
	// Netmaker's server says so in these words.
	if needsTOTP.Message != "W1R3: TOTP required" {
		t.Errorf("login with TOTP on: message %q, want Netmaker's \"W1R3: TOTP required\"", needsTOTP.Message)
	}
	// The next step's code: the one above is spent, and the server
	// accepts one step of drift.
	verified := s.success(s.post("/api/users/alice/auth/verify-totp", partial.PreAuthToken, models.UserTOTPVerificationParams{
		TOTP: code(t, e.OTPAuthURL, now.Add(30*time.Second)),
	}))
	if st, who := s.whoami(authToken(t, verified)); st != 200 || who != "user:alice" {
		t.Errorf("token from verify-totp: %d %s", st, who)
	}

	for _, tc := range []struct {
		name, path string
		body       any
		status     int
	}{
		{"wrong password", "/api/users/adm/authenticate", models.UserAuthParams{UserName: "alice", Password: "wrong password!"}, 401},
		{"unknown host", "/api/hosts/adm/authenticate", models.AuthParams{ID: "0b7e4c2d-1f3a-4b5c-8d6e-7f8091a2b3c5", Password: hostPassword}, 400},
		{"host id not a UUID", "/api/hosts/adm/authenticate", models.AuthParams{ID: "host-1", Password: hostPassword}, 400},
		{"wrong host password", "/api/hosts/adm/authenticate", models.AuthParams{ID: hostID, Password: "wrong password!"}, 401},
	} {
		status, body := s.post(tc.path, "", tc.body)
		var r models.ErrorResponse
		if err := json.Unmarshal(body, &r); err != nil || status != tc.status || r.Code != tc.status || r.Message == "" || r.Response != nil {
			t.Errorf("%s: %d %s into models.ErrorResponse %+v, %v", tc.name, status, body, r, err)
		}
	}
}

// TestSpecProfileWithNetmakerModels shows why the Netmaker profile exists:
// the spec's bytes decode into Netmaker's envelope, since encoding/json
// matches keys in any case, but the clients' exact map lookup of
// "AuthToken" finds nothing.
func TestSpecProfileWithNetmakerModels(t *testing.T) {
	s := startServer(t, "spec")
	for _, path := range []string{"/api/hosts/adm/authenticate", "/api/nodes/net-1/authenticate"} {
		r := s.success(s.post(path, "", models.AuthParams{ID: hostID, Password: hostPassword}))
		m, _ := r.Response.(map[string]any)
		if _, ok := m["AuthToken"].(string); ok {
			t.Errorf("%s: spec profile answers AuthToken: %v", path, m)
		}
		if st, who := s.whoami(m["authToken"].(string)); st != 200 || who == ":" {
			t.Errorf("%s: authToken: %d %s", path, st, who)
		}
	}
	login := s.success(s.post("/api/users/adm/authenticate", "", models.UserAuthParams{UserName: "alice", Password: userPassword}))
	user := into[models.SuccessfulUserLoginResponse](t, login) // field names match in any case
	if user.UserName != "alice" || user.AuthToken == "" {
		t.Fatalf("spec login into SuccessfulUserLoginResponse: %+v", user)
	}
	status, body := s.post("/api/users/alice/auth/init-totp", user.AuthToken, nil)
	var e models.TOTPInitiateResponse
	if err := json.Unmarshal(body, &e); status != 200 || err != nil || e.OTPAuthURL == "" || e.QRCode == "" {
		t.Fatalf("spec init-totp into TOTPInitiateResponse: %d %s", status, body)
	}
	now := time.Now()
	s.success(s.post("/api/users/alice/auth/complete-totp", user.AuthToken, models.UserTOTPVerificationParams{
		OTPAuthURL: e.OTPAuthURL, OTPAuthURLSignature: e.OTPAuthURLSignature, TOTP: code(t, e.OTPAuthURL, now),
	}))
	partial := into[models.PartialUserLoginResponse](t,
		s.success(s.post("/api/users/adm/authenticate", "", models.UserAuthParams{UserName: "alice", Password: userPassword})))
	if partial.PreAuthToken != "" {
		t.Errorf("spec profile answers pre_auth_token: %+v", partial)
	}
	status, body = s.post("/api/users/adm/authenticate", "", models.UserAuthParams{UserName: "alice", Password: "wrong password!"})
	var er models.ErrorResponse
	if err := json.Unmarshal(body, &er); err != nil || status != 401 || er.Code != 401 || er.Message == "" {
		t.Errorf("spec error into models.ErrorResponse: %d %s", status, body)
	}
}

// exchange is one request nmctl made, as the recording proxy saw it.
type exchange struct {
	method, path, authorization string
}

// recorder stands between nmctl and nmauthd: it passes every request on
// and notes what nmctl sent. It also answers GET /api/networks, a route
// of the network manager nmauth leaves to the application, as an
// application would: only for a bearer that nmauthd's /api/whoami takes.
type recorder struct {
	mu   sync.Mutex
	seen []exchange
}

func (rc *recorder) handler(t *testing.T, s *server) http.Handler {
	target, _ := url.Parse(s.url)
	proxy := httputil.NewSingleHostReverseProxy(target)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.seen = append(rc.seen, exchange{r.Method, r.URL.Path, r.Header.Get("Authorization")})
		rc.mu.Unlock()
		if r.Method == http.MethodGet && r.URL.Path == "/api/networks" {
			status, _ := s.whoami(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
			if status != http.StatusOK {
				http.Error(w, `{"Code":401,"Message":"unauthorized","Response":null}`, http.StatusUnauthorized)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `[{"netid":"net-1","addressrange":"10.101.0.0/16"}]`)
			return
		}
		proxy.ServeHTTP(w, r)
	})
}

// runNmctl runs nmctl with its own HOME, so that its config file is the
// test's.
func runNmctl(t *testing.T, home string, args ...string) (string, error) {
	t.Helper()
	_, bin := binaries(t)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestNmctlLogsIn runs the real nmctl against nmauthd --wire netmaker: the
// login saves the token in nmctl's config and the next call carries it as
// Bearer. Against the spec profile the same nmctl fails.
func TestNmctlLogsIn(t *testing.T) {
	s := startServer(t, "netmaker")
	rc := &recorder{}
	proxy := httptest.NewServer(rc.handler(t, s))
	defer proxy.Close()
	home := t.TempDir()

	for _, args := range [][]string{
		{"context", "set", "nmauth", "--endpoint", proxy.URL, "--username", "alice", "--password", userPassword},
		{"context", "use", "nmauth"},
	} {
		if out, err := runNmctl(t, home, args...); err != nil {
			t.Fatalf("nmctl %v: %v\n%s", args, err, out)
		}
	}
	out, err := runNmctl(t, home, "network", "list")
	if err != nil || !strings.Contains(out, "net-1") {
		t.Fatalf("nmctl network list: %v\n%s", err, out)
	}
	t.Logf("nmctl network list:\n%s", out)

	cfg, err := os.ReadFile(filepath.Join(home, ".netmaker", "config.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var saved string
	for _, line := range strings.Split(string(cfg), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "auth_token: "); ok {
			saved = v
		}
	}
	if saved == "" {
		t.Fatalf("nmctl saved no auth_token:\n%s", cfg)
	}
	if st, who := s.whoami(saved); st != 200 || who != "user:alice" {
		t.Fatalf("the saved token: %d %s", st, who)
	}
	want := []exchange{
		{"POST", "/api/users/adm/authenticate", ""},
		{"GET", "/api/networks", "Bearer " + saved},
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.seen) != len(want) || rc.seen[0] != want[0] || rc.seen[1] != want[1] {
		t.Fatalf("nmctl sent %q, want %q", rc.seen, want)
	}

	// The same nmctl against the spec profile cannot read its token.
	spec := startServer(t, "spec")
	home = t.TempDir()
	runNmctl(t, home, "context", "set", "spec", "--endpoint", spec.url, "--username", "alice", "--password", userPassword)
	runNmctl(t, home, "context", "use", "spec")
	if out, err := runNmctl(t, home, "network", "list"); err == nil || !strings.Contains(out, "interface conversion") {
		t.Errorf("nmctl against the spec profile: %v\n%s", err, out)
	}
}

// TestNmctlAccessTokens drives the access-token commands of the real nmctl:
// a token made with a password context authenticates a context of its
// own, lists itself without its secret, deletes itself, and is then
// refused.
func TestNmctlAccessTokens(t *testing.T) {
	s := startServer(t, "netmaker")
	rc := &recorder{}
	proxy := httptest.NewServer(rc.handler(t, s))
	defer proxy.Close()
	home := t.TempDir()
	nmctl := func(args ...string) string {
		t.Helper()
		out, err := runNmctl(t, home, args...)
		if err != nil {
			t.Fatalf("nmctl %v: %v\n%s", args, err, out)
		}
		return out
	}
	nmctl("context", "set", "password", "--endpoint", proxy.URL, "--username", "alice", "--password", userPassword)
	nmctl("context", "use", "password")
	out := nmctl("access_token", "create", "ci", "--user", "alice")
	var made struct{ AuthToken, UserName string }
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &made); err != nil || made.UserName != "alice" ||
		!strings.HasPrefix(made.AuthToken, "nmauth_at_") {
		t.Fatalf("nmctl access_token create printed %q (%v)", out, err)
	}

	nmctl("context", "set", "token", "--endpoint", proxy.URL, "--auth_token", made.AuthToken)
	nmctl("context", "use", "token")
	if out := nmctl("network", "list"); !strings.Contains(out, "net-1") {
		t.Fatalf("nmctl network list with the access token:\n%s", out)
	}
	out = nmctl("access_token", "get", "alice")
	secret := made.AuthToken[len("nmauth_at_")+17:]
	var listed []struct{ ID, Name, UserName string }
	if err := json.Unmarshal([]byte(out[strings.Index(out, "["):]), &listed); err != nil ||
		len(listed) != 1 || listed[0].Name != "ci" || strings.Contains(out, secret) {
		t.Fatalf("nmctl access_token get printed %q (%v), want the one token without its secret", out, err)
	}
	nmctl("access_token", "delete", listed[0].ID)

	if st, _ := s.whoami(made.AuthToken); st != http.StatusUnauthorized {
		t.Fatalf("the deleted token answers %d, want 401", st)
	}
	// nmctl then retries as it does after any 401, with a login its
	// context cannot make, and gives up.
	if out, err := runNmctl(t, home, "network", "list"); err == nil {
		t.Fatalf("nmctl network list with the deleted token succeeded:\n%s", out)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	bearer := "Bearer " + made.AuthToken
	for _, want := range []exchange{
		{"GET", "/api/networks", bearer},
		{"GET", "/api/v1/users/access_token", bearer},
		{"DELETE", "/api/v1/users/access_token", bearer},
	} {
		if !slices.Contains(rc.seen, want) {
			t.Errorf("nmctl never sent %v; it sent %q", want, rc.seen)
		}
	}
}
