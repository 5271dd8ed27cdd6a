package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

func TestParseTrustedProxy(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"127.0.0.1", "127.0.0.1/32"},
		{"10.1.2.3/8", "10.0.0.0/8"},
		{"2001:db8::1", "2001:db8::1/128"},
		{"2001:db8::/32", "2001:db8::/32"},
		{"::ffff:192.0.2.1", "192.0.2.1/32"},
		{"0.0.0.0/0", ""},
		{"::/0", ""},
		{"proxy.example.com", ""},
		{"10.0.0.0/33", ""},
	} {
		p, err := parseTrustedProxy(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%q accepted as %v", tc.in, p)
			}
			continue
		}
		if err != nil || p.String() != tc.want {
			t.Errorf("%q: %v, %v; want %s", tc.in, p, err, tc.want)
		}
	}
}

func TestTrustedProxiesFromFlagOrEnv(t *testing.T) {
	env := func(v string) func(string) string {
		return func(name string) string {
			if name == envTrustedProxies {
				return v
			}
			return ""
		}
	}
	o, _, err := parseArgs([]string{"serve", "--trusted-proxy", "10.0.0.0/8", "--trusted-proxy=192.0.2.7"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := trustedProxies(o, env("172.16.0.0/12"))
	if err != nil || fmt.Sprint(got) != "[10.0.0.0/8 192.0.2.7/32]" {
		t.Errorf("flags given: %v, %v; want the flags' prefixes only", got, err)
	}
	o = &options{}
	got, err = trustedProxies(o, env("172.16.0.0/12, 192.0.2.7"))
	if err != nil || fmt.Sprint(got) != "[172.16.0.0/12 192.0.2.7/32]" {
		t.Errorf("from %s: %v, %v", envTrustedProxies, got, err)
	}
	if _, err := trustedProxies(o, env("10.0.0.0/8,0.0.0.0/0")); err == nil || !strings.Contains(err.Error(), envTrustedProxies) {
		t.Errorf("a bad %s: %v, want an error naming it", envTrustedProxies, err)
	}
	if _, _, err := parseArgs([]string{"serve", "--trusted-proxy", "nginx"}); err == nil {
		t.Error("--trusted-proxy nginx accepted")
	}
}

// nginxConfig is the nginx configuration of docs/nmauthd.md's "Behind a
// reverse proxy", which TestBehindNginx runs.
const nginxConfig = "testdata/nginx.conf"

func TestDocsHaveTheNginxConfig(t *testing.T) {
	readme, err := os.ReadFile(guide)
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(nginxConfig)
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "## Behind a reverse proxy\n")
	section, _, _ = strings.Cut(section, "\n## ")
	if !strings.Contains(section, "```nginx\n"+string(conf)+"```\n") {
		t.Errorf("%s's \"Behind a reverse proxy\" does not hold %s as an nginx block; put it there verbatim", guide, nginxConfig)
	}
}

// TestBehindNginx runs nmauthd behind a real nginx with the guide's
// configuration, TLS included, and clients at two loopback addresses.
// With --trusted-proxy they keep separate limits, and a forged
// X-Forwarded-For, sent through nginx or straight to nmauthd, changes
// nothing; without it they share the proxy's limit, and nmauthd warns.
func TestBehindNginx(t *testing.T) {
	bin := nginxBinary(t)
	t.Run("trusted", func(t *testing.T) { testTrustedNginx(t, bin) })
	t.Run("not trusted", func(t *testing.T) { testUntrustedNginx(t, bin) })
}

func testTrustedNginx(t *testing.T, bin string) {
	dir := t.TempDir()
	db := filepath.Join(dir, "nmauth.db")
	env := baseEnv("MASTER_KEY=" + testMasterKey)
	a := seed(t, dir, env, db)
	d := startDaemon(t, dir, env, "--db", db, "--log-json", "--log-level", "debug", "--metrics-addr", "127.0.0.1:0", "--trusted-proxy", "127.0.0.1/32")
	px := startNginx(t, bin, strings.TrimPrefix(d.url, "http://"))
	viaProxy2, viaProxy3 := px.clientFrom(t, "127.0.0.2"), px.clientFrom(t, "127.0.0.3")
	direct2, direct4 := plainClientFrom(t, "127.0.0.2"), plainClientFrom(t, "127.0.0.4")

	// A host logs in through nginx over TLS, and nmauthd names the
	// client, not the proxy.
	body := fmt.Sprintf(`{"id":%q,"macaddress":%q,"password":%q}`, a.host, a.mac, a.hostPassword)
	if status, _ := post(t, viaProxy3, px.url, body, ""); status != http.StatusOK {
		t.Fatalf("host login through nginx: %d", status)
	}
	d.waitLog(`"type":"login.succeeded"`)
	if got := auditClients(t, d, "login.succeeded"); !slices.Equal(got, []string{"127.0.0.3"}) {
		t.Errorf("the login's client is %v, want 127.0.0.3", got)
	}

	// 127.0.0.2 spends its burst; 127.0.0.3 keeps its own.
	start := exhaust(t, viaProxy2, px.url)
	if status, _ := attempt(t, viaProxy3, px.url, ""); status != http.StatusBadRequest {
		t.Errorf("the other client behind nginx: %d, want 400 (its own limit)", status)
	}
	// 127.0.0.2 then forges X-Forwarded-For, a new address each time,
	// through nginx (which appends the address it sees) and straight to
	// nmauthd (which does not trust it): each is 127.0.0.2's attempt. The
	// bucket refills one attempt a second, so that many may pass.
	passed := 0
	for i := range 10 {
		status, _ := attempt(t, viaProxy2, px.url, fmt.Sprintf("198.51.100.%d", i+1))
		passed += boolInt(status != http.StatusTooManyRequests)
	}
	status, _ := attempt(t, direct2, d.url, "198.51.100.99")
	passed += boolInt(status != http.StatusTooManyRequests)
	if refilled := 1 + int(time.Since(start)/time.Second); passed > refilled {
		t.Errorf("%d of 11 attempts with forged X-Forwarded-For passed; the limit allows %d", passed, refilled)
	}
	// A forged header cannot put a client into another's bucket either.
	if status, _ := attempt(t, direct4, d.url, "127.0.0.2"); status != http.StatusBadRequest {
		t.Errorf("127.0.0.4 claiming to be 127.0.0.2: %d, want 400 (its own limit)", status)
	}
	d.waitLog("not a trusted proxy")
	for _, c := range auditClients(t, d, "client.throttled") {
		if c != "127.0.0.2" {
			t.Errorf("a throttled attempt was counted for %s; every one is 127.0.0.2's", c)
		}
	}
	logged := warnings(t, d, "not a trusted proxy")
	if len(logged) == 0 || logged[0]["peer"] != "127.0.0.2" {
		t.Errorf("warnings about X-Forwarded-For: %v, want the first naming peer 127.0.0.2", logged)
	}
	m := d.metrics(t)
	if v := m["nmauthd_client_forwarded_untrusted_total"]; v != 2 {
		t.Errorf("nmauthd_client_forwarded_untrusted_total = %v, want 2 (the two sent straight to nmauthd)", v)
	}
	if v := m["nmauthd_client_addresses"]; v < 3 {
		t.Errorf("nmauthd_client_addresses = %v, want at least 3", v)
	}
}

func testUntrustedNginx(t *testing.T, bin string) {
	dir := t.TempDir()
	db := filepath.Join(dir, "nmauth.db")
	env := baseEnv("MASTER_KEY=" + testMasterKey)
	d := startDaemon(t, dir, env, "--db", db, "--log-json", "--metrics-addr", "127.0.0.1:0")
	px := startNginx(t, bin, strings.TrimPrefix(d.url, "http://"))
	viaProxy2, viaProxy3 := px.clientFrom(t, "127.0.0.2"), px.clientFrom(t, "127.0.0.3")

	// Every client has nginx's address: once one spends the burst, the
	// other is refused too.
	start := exhaust(t, viaProxy2, px.url)
	refused := 0
	for range 5 {
		status, _ := attempt(t, viaProxy3, px.url, "")
		refused += boolInt(status == http.StatusTooManyRequests)
	}
	if passed := 5 - refused; refused == 0 || passed > 1+int(time.Since(start)/time.Second) {
		t.Errorf("127.0.0.3 behind an untrusted proxy: %d of 5 refused, want the limit 127.0.0.2 spent", refused)
	}
	// More than 64 attempts of the minute from one address, in two
	// minutes at worst.
	for range 130 {
		attempt(t, viaProxy3, px.url, "")
	}
	d.waitLog("most login attempts of this minute come from one address")
	for _, c := range auditClients(t, d, "client.throttled") {
		if c != "127.0.0.1" {
			t.Errorf("a throttled attempt was counted for %s, not the proxy", c)
		}
	}
	if w := warnings(t, d, "not a trusted proxy"); len(w) == 0 || w[0]["peer"] != "127.0.0.1" {
		t.Errorf("warnings about X-Forwarded-For: %v, want one naming nginx, 127.0.0.1", w)
	}
	if w := warnings(t, d, "come from one address"); len(w) == 0 || w[0]["client"] != "127.0.0.1" {
		t.Errorf("warnings about one address: %v, want one naming nginx, 127.0.0.1", w)
	}
	m := d.metrics(t)
	if m["nmauthd_client_forwarded_untrusted_total"] < 150 || m["nmauthd_client_one_address_minutes_total"] < 1 {
		t.Errorf("metrics: forwarded untrusted %v, want every attempt; one-address minutes %v, want 1 or 2",
			m["nmauthd_client_forwarded_untrusted_total"], m["nmauthd_client_one_address_minutes_total"])
	}
}

// nginxBinary finds Debian's nginx, which .ci/run installs.
func nginxBinary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx"
	}
	requireCI(t, "nginx is not installed (Debian's nginx package; .ci/run installs it)")
	return ""
}

// nginxProxy is a running nginx in front of nmauthd.
type nginxProxy struct {
	url   string
	roots *x509.CertPool
}

// startNginx runs nginx with the guide's configuration in front of
// upstream: listening on a free loopback port with a certificate made
// here, and everything it writes under a temporary prefix, so that it
// runs as root or not. One process, no daemon: the test stops it.
func startNginx(t *testing.T, bin, upstream string) *nginxProxy {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile, roots := selfSignedCert(t, dir)
	port := freePort(t)
	site := readNginxConfig(t, map[string]string{
		"listen 443 ssl;":                "listen 127.0.0.1:" + port + " ssl;",
		"server 127.0.0.1:8081;":         "server " + upstream + ";",
		"/etc/ssl/nmauth/fullchain.pem;": certFile + ";",
		"/etc/ssl/nmauth/privkey.pem;":   keyFile + ";",
	})
	sitePath := filepath.Join(dir, "nmauth.conf")
	var main bytes.Buffer
	fmt.Fprintf(&main, "daemon off;\nmaster_process off;\npid %s;\nerror_log %s info;\n", filepath.Join(dir, "nginx.pid"), filepath.Join(dir, "error.log"))
	fmt.Fprintf(&main, "events { worker_connections 64; }\nhttp {\n    access_log %s;\n", filepath.Join(dir, "access.log"))
	for _, temp := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		fmt.Fprintf(&main, "    %s_temp_path %s;\n", temp, filepath.Join(dir, temp))
	}
	fmt.Fprintf(&main, "    include %s;\n}\n", sitePath)
	mainPath := filepath.Join(dir, "nginx.conf")
	for path, b := range map[string][]byte{sitePath: []byte(site), mainPath: main.Bytes()} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	errLog := filepath.Join(dir, "error.log")
	cmd := exec.Command(bin, "-p", dir, "-c", mainPath, "-e", errLog)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	addr := "127.0.0.1:" + port
	deadline := time.Now().Add(startupLimit)
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		select {
		case <-done:
			log, _ := os.ReadFile(errLog)
			t.Fatalf("nginx exited: %v\n%s%s", cmd.ProcessState, out.String(), log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("nginx did not listen")
		}
	}
	return &nginxProxy{url: "https://" + addr, roots: roots}
}

// readNginxConfig reads the guide's configuration and makes each of the
// replacements, each of which must be found exactly once.
func readNginxConfig(t *testing.T, replace map[string]string) string {
	t.Helper()
	b, err := os.ReadFile(nginxConfig)
	if err != nil {
		t.Fatal(err)
	}
	conf := string(b)
	for old, repl := range replace {
		if n := strings.Count(conf, old); n != 1 {
			t.Fatalf("%s holds %q %d times, want once", nginxConfig, old, n)
		}
		conf = strings.Replace(conf, old, repl, 1)
	}
	return conf
}

// selfSignedCert writes a certificate for nmauth.example.com and its key
// into dir, and returns their paths and a pool that trusts it.
func selfSignedCert(t *testing.T, dir string) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "nmauth.example.com"},
		DNSNames:     []string{"nmauth.example.com"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "fullchain.pem"), filepath.Join(dir, "privkey.pem")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	roots = x509.NewCertPool()
	roots.AppendCertsFromPEM(certPEM)
	return certFile, keyFile, roots
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// clientFrom is a client that connects to nginx over TLS from the
// loopback address local, as a host at that address would.
func (p *nginxProxy) clientFrom(t *testing.T, local string) *http.Client {
	c := plainClientFrom(t, local)
	c.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: p.roots, ServerName: "nmauth.example.com"}
	return c
}

// plainClientFrom is a client that connects from the loopback address
// local.
func plainClientFrom(t *testing.T, local string) *http.Client {
	t.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: dialer.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: time.Minute}
}

// post sends a host login body to base, with X-Forwarded-For xff if not
// empty, and returns the status and Retry-After.
func post(t *testing.T, c *http.Client, base, body, xff string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/api/hosts/adm/authenticate", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// attempt is a cheap login attempt: a malformed body, which the
// per-client limit counts before the body is read, answered 400 within
// the limit and 429 past it.
func attempt(t *testing.T, c *http.Client, base, xff string) (int, string) {
	t.Helper()
	return post(t, c, base, "not JSON", xff)
}

// exhaust makes attempts until one is refused, checks that the burst of
// 20 was allowed, plus what refilled meanwhile at one a second, and
// returns when the bucket was found empty.
func exhaust(t *testing.T, c *http.Client, base string) time.Time {
	t.Helper()
	start := time.Now()
	for n := 0; ; n++ {
		status, retry := attempt(t, c, base, "")
		if status == http.StatusBadRequest {
			continue
		}
		if status != http.StatusTooManyRequests || retry == "" {
			t.Fatalf("attempt %d: %d, Retry-After %q; want 400, then 429 with Retry-After", n+1, status, retry)
		}
		if most := 20 + 1 + int(time.Since(start)/time.Second); n < 20 || n > most {
			t.Fatalf("%d attempts passed before a 429, want 20 and at most %d", n, most)
		}
		return time.Now()
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// waitLog waits until the daemon has logged a line holding s.
func (d *daemon) waitLog(s string) {
	d.t.Helper()
	deadline := time.Now().Add(startupLimit)
	for !strings.Contains(d.stderr.String(), s) {
		if time.Now().After(deadline) {
			d.t.Fatalf("nmauthd never logged %q\n%s", s, d.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// auditClients returns the client of each audit event of type typ that
// the daemon logged (it runs with --log-json).
func auditClients(t *testing.T, d *daemon, typ nmauth.EventType) []string {
	t.Helper()
	var clients []string
	for _, rec := range logRecords(t, d.stderr.String()) {
		if e, ok := rec["event"].(map[string]any); ok && rec["msg"] == "audit" && e["type"] == string(typ) {
			c, _ := e["client"].(string)
			clients = append(clients, c)
		}
	}
	return clients
}

// warnings returns the WARN records of the daemon whose message holds s.
func warnings(t *testing.T, d *daemon, s string) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for _, rec := range logRecords(t, d.stderr.String()) {
		if msg, _ := rec["msg"].(string); rec["level"] == "WARN" && strings.Contains(msg, s) {
			recs = append(recs, rec)
		}
	}
	return recs
}

var metricsAddrJSON = regexp.MustCompile(`"msg":"metrics listening","addr":"([^"]+)"`)

// metrics reads the daemon's unlabelled series from its metrics listener.
func (d *daemon) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	m := metricsAddrJSON.FindStringSubmatch(d.stderr.String())
	if m == nil {
		t.Fatalf("no metrics listening line\n%s", d.stderr.String())
	}
	_, body := get(t, "http://"+m[1]+"/metrics")
	series := map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		var name string
		var v float64
		if _, err := fmt.Sscanf(line, "%s %g", &name, &v); err == nil && !strings.HasPrefix(name, "#") {
			series[name] = v
		}
	}
	return series
}
