package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/nmauth/nmauth"
)

// startupLimit bounds how long a test waits for nmauthd to come up or go
// down; it only keeps a broken build from hanging the test run.
const startupLimit = 2 * time.Minute

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// nmauthdBinary builds the command once per test run, with the race
// detector when the tests have it.
func nmauthdBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "nmauthd-test-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "nmauthd")
		args := []string{"build", "-o", binPath}
		if raceBuild {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// baseEnv is the test's environment without the variables nmauthd reads,
// so that the developer's own settings cannot leak into a test.
func baseEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "MASTER_KEY", "NMAUTH_SECRET", "NMAUTH_ENV", "NMAUTH_SSO_CLIENT_SECRET", "NMAUTH_DB":
			continue
		}
		env = append(env, kv)
	}
	if raceBuild {
		// The race runtime otherwise sleeps a second at every exit.
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	return append(env, extra...)
}

// testMasterKey is a master key long enough to be accepted.
const testMasterKey = "test-master-key-0123456789abcdef-0123"

// result is the outcome of one nmauthd admin run.
type result struct {
	code           int
	stdout, stderr string
}

// runNmauthd runs one nmauthd command in dir and waits for it.
func runNmauthd(t *testing.T, dir string, env []string, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(nmauthdBinary(t), args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("nmauthd %s: %v", strings.Join(args, " "), err)
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

// mustRun runs an nmauthd command that must succeed.
func mustRun(t *testing.T, dir string, env []string, stdin string, args ...string) string {
	t.Helper()
	r := runNmauthd(t, dir, env, stdin, args...)
	if r.code != 0 {
		t.Fatalf("nmauthd %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// daemon is a running nmauthd serve.
type daemon struct {
	t      *testing.T
	cmd    *exec.Cmd
	url    string
	stdout *lockedBuffer
	stderr *logSink
	done   chan struct{}
	// wire is the profile of its --wire flag, whose document every
	// exchange with it is checked against.
	wire nmauth.WireProfile
}

// startDaemon runs nmauthd serve on a free loopback port and waits until
// /healthz answers.
func startDaemon(t *testing.T, dir string, env []string, args ...string) *daemon {
	t.Helper()
	return startDaemonVia(t, nil, dir, env, args...)
}

// startDaemonVia is startDaemon with nmauthd's command line handed to
// prefix, a command that runs it (sh -c 'ulimit -n 100; exec "$@"' sh,
// say); a nil prefix runs nmauthd itself.
func startDaemonVia(t *testing.T, prefix []string, dir string, env []string, args ...string) *daemon {
	t.Helper()
	args = append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)
	argv := append(append(slices.Clip(prefix), nmauthdBinary(t)), args...)
	d := &daemon{
		t:      t,
		cmd:    exec.Command(argv[0], argv[1:]...),
		stdout: &lockedBuffer{},
		stderr: &logSink{listening: make(chan string, 1)},
		done:   make(chan struct{}),
		wire:   wireFlag(t, args),
	}
	d.cmd.Dir, d.cmd.Env = dir, env
	d.cmd.Stdout, d.cmd.Stderr = d.stdout, d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		d.cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(func() {
		d.cmd.Process.Kill()
		<-d.done
	})
	select {
	case addr := <-d.stderr.listening:
		d.url = "http://" + addr
	case <-d.done:
		t.Fatalf("nmauthd exited at startup: %v\n%s", d.cmd.ProcessState, d.stderr.String())
	case <-time.After(startupLimit):
		t.Fatalf("nmauthd did not start listening\n%s", d.stderr.String())
	}
	d.waitHealthy()
	return d
}

// wireFlag returns the profile that the serve arguments args choose with
// --wire, the spec profile without one. The last --wire wins, as it does
// for the flag package.
func wireFlag(t *testing.T, args []string) nmauth.WireProfile {
	t.Helper()
	name := "spec"
	for i, a := range args {
		a = "-" + strings.TrimLeft(a, "-")
		switch {
		case a == "-wire" && i+1 < len(args):
			name = args[i+1]
		case strings.HasPrefix(a, "-wire="):
			name = strings.TrimPrefix(a, "-wire=")
		}
	}
	w, err := nmauth.ParseWireProfile(name)
	if err != nil {
		t.Fatalf("startDaemon: %v", err)
	}
	return w
}

func (d *daemon) waitHealthy() {
	d.t.Helper()
	deadline := time.Now().Add(startupLimit)
	for {
		resp, err := http.Get(d.url + "/healthz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.TrimSpace(string(body)) == "ok" {
				return
			}
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("GET /healthz never answered 200 ok (last error %v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitStdout waits until the daemon has printed want: its stdout and its
// log travel through separate pipes.
func (d *daemon) waitStdout(want string) string {
	d.t.Helper()
	deadline := time.Now().Add(startupLimit)
	for !strings.Contains(d.stdout.String(), want) {
		if time.Now().After(deadline) {
			d.t.Fatalf("nmauthd never printed %q; stdout:\n%s", want, d.stdout.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return d.stdout.String()
}

// stop sends SIGTERM and requires a clean exit.
func (d *daemon) stop() {
	d.t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		d.t.Fatal(err)
	}
	d.wait()
	if code := d.cmd.ProcessState.ExitCode(); code != 0 {
		d.t.Fatalf("nmauthd exited with %d after SIGTERM\n%s", code, d.stderr.String())
	}
	if !strings.Contains(d.stderr.String(), "stopped") {
		d.t.Errorf("no \"stopped\" line after SIGTERM\n%s", d.stderr.String())
	}
}

// kill9 kills the process with SIGKILL, as a crash or power loss would.
func (d *daemon) kill9() {
	d.t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		d.t.Fatal(err)
	}
	d.wait()
}

func (d *daemon) wait() {
	d.t.Helper()
	select {
	case <-d.done:
	case <-time.After(startupLimit):
		d.t.Fatal("nmauthd did not exit")
	}
	if strings.Contains(d.stderr.String(), "DATA RACE") {
		d.t.Errorf("the race detector found a data race in nmauthd:\n%s", d.stderr.String())
	}
}

// reply is an HTTP answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

var httpClient = &http.Client{Timeout: time.Minute}

// call sends one request; body, if not nil, is sent as JSON.
func (d *daemon) call(method, path, bearer string, body any) reply {
	d.t.Helper()
	return callURL(d.t, d.wire, method, d.url+path, bearer, body)
}

// callURL sends one request to a server answering in profile wire and
// checks the exchange against that profile's document.
func callURL(t *testing.T, wire nmauth.WireProfile, method, target, bearer string, body any) reply {
	t.Helper()
	var rd io.Reader
	var sent []byte
	if body != nil {
		var err error
		if sent, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(sent)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, target, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, body: b}
	checkOpenAPI(t, wire, req, sent, r)
	return r
}

// decode requires status want and decodes the body into a T.
func decode[T any](t *testing.T, r reply, want int) T {
	t.Helper()
	if r.status != want {
		t.Fatalf("status %d, want %d; body %s", r.status, want, r.body)
	}
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
	return v
}

// The answers of the routes, as a client outside the library reads them.
type (
	envelope[T any] struct {
		Code     int    `json:"code"`
		Message  string `json:"message"`
		Response T      `json:"response"`
	}
	hostLogin struct {
		AuthToken string `json:"authToken"`
		ID        string `json:"id"`
	}
	userLogin struct {
		AuthToken         string `json:"authToken"`
		UserName          string `json:"userName"`
		PreAuthToken      string `json:"preAuthToken"`
		TOTPRequired      bool   `json:"totpRequired"`
		RecoveryCodesLeft *int   `json:"recoveryCodesLeft"`
	}
	enrollment struct {
		URL       string `json:"otp_auth_url"`
		Signature string `json:"otp_auth_url_signature"`
		QRCode    string `json:"qr_code"`
	}
	completion struct {
		RecoveryCodes []string `json:"recoveryCodes"`
		AuthToken     string   `json:"authToken"`
	}
	principal struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
		TOTP bool   `json:"totp"`
	}
)

func (d *daemon) loginHost(id, mac, password string) hostLogin {
	d.t.Helper()
	r := d.call("POST", "/api/hosts/adm/authenticate", "", map[string]string{"id": id, "macaddress": mac, "password": password})
	return decode[envelope[hostLogin]](d.t, r, http.StatusOK).Response
}

func (d *daemon) loginUser(name, password string) userLogin {
	d.t.Helper()
	r := d.call("POST", "/api/users/adm/authenticate", "", map[string]string{"username": name, "password": password})
	return decode[envelope[userLogin]](d.t, r, http.StatusOK).Response
}

func (d *daemon) initTOTP(name, bearer string) enrollment {
	d.t.Helper()
	return decode[enrollment](d.t, d.call("POST", "/api/users/"+name+"/auth/init-totp", bearer, nil), http.StatusOK)
}

func completeBody(e enrollment, code string) map[string]string {
	return map[string]string{"otp_auth_url": e.URL, "otp_auth_url_signature": e.Signature, "totp": code}
}

func (d *daemon) completeTOTP(name, bearer string, e enrollment, code string) completion {
	d.t.Helper()
	r := d.call("POST", "/api/users/"+name+"/auth/complete-totp", bearer, completeBody(e, code))
	return decode[envelope[completion]](d.t, r, http.StatusOK).Response
}

func (d *daemon) verifyTOTP(name, preAuth, code string) reply {
	d.t.Helper()
	return d.call("POST", "/api/users/"+name+"/auth/verify-totp", preAuth, map[string]string{"totp": code})
}

func (d *daemon) whoami(bearer string) principal {
	d.t.Helper()
	return decode[principal](d.t, d.call("GET", "/api/whoami", bearer, nil), http.StatusOK)
}

// totpCode computes the code for the secret of an otpauth URL at time at,
// independently of the server's own code.
func totpCode(t *testing.T, otpauthURL string, at time.Time) string {
	t.Helper()
	u, err := url.Parse(otpauthURL)
	if err != nil {
		t.Fatal(err)
	}
	secret := u.Query().Get("secret")
	if secret == "" {
		t.Fatalf("no secret in %s", otpauthURL)
	}
	code, err := totp.GenerateCodeCustom(secret, at, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// nextCode is the code of the next 30-second step, later than any step
// used by a code computed from time.Now() before it; the server accepts
// it as clock drift.
func nextCode(t *testing.T, otpauthURL string) string {
	t.Helper()
	return totpCode(t, otpauthURL, time.Now().Add(30*time.Second))
}

// wrongCode is a well-formed code that the secret of otpauthURL does not
// give for any step the server accepts now.
func wrongCode(t *testing.T, otpauthURL string) string {
	t.Helper()
	now := time.Now()
	valid := []string{}
	for _, d := range []time.Duration{-time.Minute, -30 * time.Second, 0, 30 * time.Second, time.Minute} {
		valid = append(valid, totpCode(t, otpauthURL, now.Add(d)))
	}
	for _, c := range []string{"000000", "111111", "222222", "333333", "444444", "555555"} {
		if !slices.Contains(valid, c) {
			return c
		}
	}
	t.Fatal("no wrong code found")
	return ""
}

// lockedBuffer is a bytes.Buffer safe for the writer goroutine of exec.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// logSink keeps nmauthd's log and reports the address of its
// "listening" line, in JSON or text form.
type logSink struct {
	lockedBuffer
	listening chan string
	partial   []byte
	found     bool
}

var textAddr = regexp.MustCompile(`\baddr=(\S+)`)

func (s *logSink) Write(p []byte) (int, error) {
	s.lockedBuffer.Write(p)
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := s.partial[:i]
		s.partial = s.partial[i+1:]
		if addr := listeningAddr(line); addr != "" && !s.found {
			s.found = true
			s.listening <- addr
		}
	}
}

func listeningAddr(line []byte) string {
	var rec struct{ Msg, Addr string }
	if json.Unmarshal(line, &rec) == nil {
		if rec.Msg == "listening" {
			return rec.Addr
		}
		return ""
	}
	if bytes.Contains(line, []byte("msg=listening")) {
		if m := textAddr.FindSubmatch(line); m != nil {
			return string(m[1])
		}
	}
	return ""
}

// logRecords parses the JSON log lines of a daemon run with --log-json.
func logRecords(t *testing.T, log string) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		recs = append(recs, rec)
	}
	return recs
}

// requireCI fails in CI and skips elsewhere, for a test that needs
// something the machine may lack.
func requireCI(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}
