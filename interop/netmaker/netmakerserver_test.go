package netmaker

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gravitl/netmaker/models"
)

// Netmaker's own server, v1.4.0, built from its module and run on this
// machine: SQLite or PostgreSQL, Debian's mosquitto as its broker on a
// plain tcp:// listener on loopback, and a stub on loopback that answers
// its public-address lookups. Nothing it does may reach beyond this
// machine: its HTTP clients are given a proxy, the stub, that refuses and
// counts every request for another host, and a test fails when one came.

var (
	netmakerOnce sync.Once
	netmakerBin  string
	netmakerErr  error
)

// netmakerBinary builds Netmaker's server (its main package, community
// edition: no build tags) at the version go.mod requires, once per run.
// Its SQLite driver is mattn/go-sqlite3, so the build needs cgo.
func netmakerBinary(t *testing.T) string {
	t.Helper()
	binaries(t) // makes binDir, which TestMain removes
	netmakerOnce.Do(func() {
		netmakerBin = filepath.Join(binDir, "netmaker")
		cmd := exec.Command("go", "build", "-o", netmakerBin, "github.com/gravitl/netmaker")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			netmakerErr = &buildError{"github.com/gravitl/netmaker", err, out}
		}
	})
	if netmakerErr != nil {
		t.Fatal(netmakerErr)
	}
	return netmakerBin
}

// netmakerServer is a running Netmaker server.
type netmakerServer struct {
	t *testing.T
	// URL is its API, http://127.0.0.1:PORT.
	URL string
	// Dir is its working directory; on SQLite its database is
	// Dir/data/netmaker.db.
	Dir string
	// Database is "sqlite" or "postgres".
	Database string
	// DB is its database as nmauthd's --netmaker-db and --from take it:
	// the SQLite file's path, or a postgres:// URL whose search_path
	// names the test's schema.
	DB string
	// MasterKey is the master key it was started with.
	MasterKey string

	cmd     *exec.Cmd
	done    chan struct{}
	logPath string
	guard   *outboundGuard
}

// startNetmaker starts a Netmaker server with a fresh database of kind
// database ("sqlite", or "postgres" in a schema of its own on the server
// NMAUTH_TEST_POSTGRES names) and its own mosquitto, and waits until it
// reports its database and broker connected. It is stopped when the test
// ends.
func startNetmaker(t *testing.T, database string) *netmakerServer {
	t.Helper()
	bin := netmakerBinary(t)
	dir := t.TempDir()
	guard := startOutboundGuard(t)
	broker := startMosquitto(t, dir)
	port := freePort(t)
	nm := &netmakerServer{
		t:         t,
		URL:       "http://127.0.0.1:" + port,
		Dir:       dir,
		Database:  database,
		MasterKey: masterKey,
		done:      make(chan struct{}),
		logPath:   filepath.Join(dir, "netmaker.log"),
		guard:     guard,
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"MASTER_KEY=" + masterKey,
		"NODE_ID=netmaker-interop",
		"API_PORT=" + port,
		// With SERVER_HOST (or SERVER_HTTP_HOST) 127.0.0.1 it asks
		// PUBLIC_IP_SERVICE for its address at start; it asks it on
		// other occasions too, and falls back to three public services
		// when that does not answer 200.
		"SERVER_HOST=127.0.0.1",
		"SERVER_HTTP_HOST=127.0.0.1",
		"SERVER_API_CONN_STRING=127.0.0.1:" + port,
		"PUBLIC_IP_SERVICE=" + guard.url + "/ip",
		"SERVER_BROKER_ENDPOINT=tcp://" + broker,
		"BROKER_ENDPOINT=tcp://" + broker,
		// Off, or it sends usage data to its vendor once a day and at
		// start; no CoreDNS, no metrics exporter.
		"TELEMETRY=off",
		"DNS_MODE=off",
		"METRICS_EXPORTER=off",
		"NETCLIENT_AUTO_UPDATE=disabled",
		"VERBOSITY=1",
		// Loopback is never proxied, so the stub and the broker are
		// reached directly; any other host goes to the guard.
		"HTTP_PROXY=" + guard.url,
		"HTTPS_PROXY=" + guard.url,
		"NO_PROXY=",
	}
	switch database {
	case "sqlite":
		env = append(env, "DATABASE=sqlite")
		nm.DB = filepath.Join(dir, "data", "netmaker.db")
	case "postgres":
		dsn := netmakerPostgres(t)
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal("NMAUTH_TEST_POSTGRES is not a URL")
		}
		schema := "netmaker_server_" + strings.ToLower(rand.Text()[:12])
		createSchema(t, dsn, schema)
		pass, _ := u.User.Password()
		// Netmaker's DSN is "host=… port=… user=… password=… dbname=…
		// sslmode=…" from these variables; the keyword after
		// sslmode's value sets the schema.
		env = append(env,
			"DATABASE=postgres",
			"SQL_HOST="+u.Hostname(),
			"SQL_PORT="+u.Port(),
			"SQL_USER="+u.User.Username(),
			"SQL_PASS="+pass,
			"SQL_DB="+strings.TrimPrefix(u.Path, "/"),
			"SQL_SSL_MODE="+u.Query().Get("sslmode")+" search_path="+schema,
		)
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		nm.DB = u.String()
	default:
		t.Fatalf("startNetmaker: unknown database %q", database)
	}
	logFile, err := os.Create(nm.logPath)
	if err != nil {
		t.Fatal(err)
	}
	nm.cmd = exec.Command(bin)
	nm.cmd.Dir, nm.cmd.Env = dir, env
	nm.cmd.Stdout, nm.cmd.Stderr = logFile, logFile
	if err := nm.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		nm.cmd.Wait()
		logFile.Close()
		close(nm.done)
	}()
	t.Cleanup(func() {
		nm.Stop()
		if t.Failed() {
			t.Logf("Netmaker's log:\n%s", nm.logTail())
		}
		if got := guard.refused(); len(got) > 0 {
			t.Errorf("Netmaker tried to reach beyond this machine: %q", got)
		}
	})
	nm.waitReady()
	return nm
}

// netmakerPostgres is the PostgreSQL server the tests put Netmaker's
// database on: NMAUTH_TEST_POSTGRES.
func netmakerPostgres(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("NMAUTH_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("NMAUTH_TEST_POSTGRES is not set in CI")
		}
		t.Skip(`NMAUTH_TEST_POSTGRES is not set; to run: export NMAUTH_TEST_POSTGRES="$(bash .ci/postgres)"`)
	}
	return dsn
}

// waitReady polls Netmaker's status route until it reports its database
// and its broker connected.
func (nm *netmakerServer) waitReady() {
	nm.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-nm.done:
			nm.t.Fatalf("Netmaker exited before it was ready:\n%s", nm.logTail())
		default:
		}
		var st struct {
			DB     bool `json:"db_connected"`
			Broker bool `json:"broker_connected"`
		}
		resp, err := http.Get(nm.URL + "/api/server/status")
		if err == nil {
			json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && st.DB && st.Broker {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	nm.t.Fatalf("Netmaker was not ready within 60 s:\n%s", nm.logTail())
}

// Stop ends the server (SIGTERM, then SIGKILL after 10 s) and waits for
// it. Stopping a stopped server does nothing.
func (nm *netmakerServer) Stop() {
	select {
	case <-nm.done:
		return
	default:
	}
	nm.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-nm.done:
	case <-time.After(10 * time.Second):
		nm.cmd.Process.Kill()
		<-nm.done
	}
}

// logTail is the end of the server's log, for a failure's message.
func (nm *netmakerServer) logTail() string {
	b, _ := os.ReadFile(nm.logPath)
	if len(b) > 8000 {
		b = b[len(b)-8000:]
	}
	return string(b)
}

// call sends a request with an optional JSON body and bearer to Netmaker,
// decodes a 2xx answer into out when out is not nil, and returns the
// status and the body.
func (nm *netmakerServer) call(method, path, bearer string, body, out any) (int, []byte) {
	nm.t.Helper()
	return callJSON(nm.t, method, nm.URL+path, bearer, body, out)
}

// callJSON is call for any server.
func callJSON(t *testing.T, method, target, bearer string, body, out any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, target, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: decoding %s: %v", method, target, b, err)
		}
	}
	return resp.StatusCode, b
}

// must fails the test unless status is 200.
func (nm *netmakerServer) must(what string, status int, body []byte) {
	nm.t.Helper()
	if status != http.StatusOK {
		nm.t.Fatalf("Netmaker: %s: %d %s", what, status, body)
	}
}

// CreateSuperAdmin makes Netmaker's first user, its super admin, through
// the route its dashboard uses on a new server.
func (nm *netmakerServer) CreateSuperAdmin(name, password string) {
	nm.t.Helper()
	st, b := nm.call(http.MethodPost, "/api/users/adm/createsuperadmin", "", models.User{UserName: name, Password: password}, nil)
	nm.must("creating super admin "+name, st, b)
}

// Login logs a user in at Netmaker itself and returns the token Netmaker
// signed.
func (nm *netmakerServer) Login(name, password string) string {
	nm.t.Helper()
	var r models.SuccessResponse
	st, b := nm.call(http.MethodPost, "/api/users/adm/authenticate", "", models.UserAuthParams{UserName: name, Password: password}, &r)
	nm.must("logging "+name+" in", st, b)
	return authToken(nm.t, r)
}

// CreateUser makes a user with a token of the super admin. The community
// edition makes every user it creates an admin ("non-admins users can
// only be created on Pro version"), and refuses the master key here,
// since it looks the caller up as a user.
func (nm *netmakerServer) CreateUser(adminToken, name, password string) {
	nm.t.Helper()
	st, b := nm.call(http.MethodPost, "/api/users/"+url.PathEscape(name), adminToken,
		models.User{UserName: name, Password: password, PlatformRoleID: models.AdminRole}, nil)
	nm.must("creating user "+name, st, b)
}

// CreateNetwork makes a network with an IPv4 range, with the master key.
func (nm *netmakerServer) CreateNetwork(netID, cidr string) {
	nm.t.Helper()
	st, b := nm.call(http.MethodPost, "/api/networks", nm.MasterKey,
		map[string]string{"netid": netID, "addressrange": cidr}, nil)
	nm.must("creating network "+netID, st, b)
}

// EnrollmentKey makes an enrollment key for network, good for uses
// registrations, and returns the token netclient registers with.
func (nm *netmakerServer) EnrollmentKey(network string, uses int) string {
	nm.t.Helper()
	var k models.EnrollmentKey
	st, b := nm.call(http.MethodPost, "/api/v1/enrollment-keys", nm.MasterKey, models.APIEnrollmentKey{
		Networks:      []string{network},
		Tags:          []string{"interop-" + strings.ToLower(rand.Text()[:6])},
		UsesRemaining: uses,
		Type:          models.Uses,
	}, &k)
	nm.must("creating an enrollment key", st, b)
	if k.Token == "" {
		nm.t.Fatalf("Netmaker answered no enrollment token: %s", b)
	}
	return k.Token
}

// RegisterHost registers a host as netclient does, through Netmaker's
// register route with an enrollment token: Netmaker keeps the bcrypt hash
// of password and joins the host to the key's networks.
func (nm *netmakerServer) RegisterHost(token string, id uuid.UUID, password string, mac net.HardwareAddr) {
	nm.t.Helper()
	// A traffic key is required; its value does not matter here.
	traffic := make([]byte, 32)
	rand.Read(traffic)
	st, b := nm.call(http.MethodPost, "/api/v1/host/register/"+token, "", models.Host{
		ID:               id,
		Name:             "interop-" + id.String()[:8],
		HostPass:         password,
		Version:          "v1.4.0",
		OS:               "linux",
		MacAddress:       mac,
		TrafficKeyPublic: traffic,
		ListenPort:       51821,
	}, nil)
	nm.must("registering host "+id.String(), st, b)
}

// HostLogin logs a host in at Netmaker itself, as netclient does, and
// returns the token.
func (nm *netmakerServer) HostLogin(id uuid.UUID, password string, mac net.HardwareAddr) string {
	nm.t.Helper()
	var r models.SuccessResponse
	st, b := nm.call(http.MethodPost, "/api/hosts/adm/authenticate", "", models.AuthParams{
		ID: id.String(), Password: password, MacAddress: mac.String(),
	}, &r)
	nm.must("logging host "+id.String()+" in", st, b)
	return authToken(nm.t, r)
}

// netmakerAccounts are the accounts seedNetmaker makes.
type netmakerAccounts struct {
	Network                     string
	Admin, AdminPassword        string
	User, UserPassword          string
	HostID                      uuid.UUID
	HostPassword                string
	HostMAC                     net.HardwareAddr
	AdminToken, EnrollmentToken string
}

// seedNetmaker makes, through Netmaker's API, a network, its super admin,
// a second user and a host registered with an enrollment key, as an
// operator and netclient would.
func seedNetmaker(nm *netmakerServer) netmakerAccounts {
	nm.t.Helper()
	a := netmakerAccounts{
		Network: "net-1",
		Admin:   "admin", AdminPassword: "admin-password-1",
		User: "bob", UserPassword: "bob-password-1",
		HostID:       uuid.New(),
		HostPassword: "host-password-" + rand.Text()[:8],
		HostMAC:      net.HardwareAddr{0x02, 0x00, 0x5e, 0x10, 0x20, 0x30},
	}
	nm.CreateSuperAdmin(a.Admin, a.AdminPassword)
	nm.CreateNetwork(a.Network, "10.101.0.0/24")
	a.AdminToken = nm.Login(a.Admin, a.AdminPassword)
	nm.CreateUser(a.AdminToken, a.User, a.UserPassword)
	a.EnrollmentToken = nm.EnrollmentKey(a.Network, 10)
	nm.RegisterHost(a.EnrollmentToken, a.HostID, a.HostPassword, a.HostMAC)
	return a
}

// startMosquitto runs Debian's mosquitto for one Netmaker server: a plain
// tcp:// listener on a free loopback port, anonymous, nothing kept. It
// returns host:port once the port accepts connections.
func startMosquitto(t *testing.T, dir string) string {
	t.Helper()
	bin, err := exec.LookPath("mosquitto")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/mosquitto"); serr != nil {
			t.Fatal("mosquitto is not installed (Debian: apt-get install mosquitto; .ci/run installs it)")
		}
		bin = "/usr/sbin/mosquitto"
	}
	addr := "127.0.0.1:" + freePort(t)
	_, port, _ := net.SplitHostPort(addr)
	conf := filepath.Join(dir, "mosquitto.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("listener %s 127.0.0.1\nallow_anonymous true\npersistence false\n", port)), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(bin, "-c", conf)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	for range 100 {
		select {
		case <-exited:
			t.Fatalf("mosquitto exited: %s", out.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return addr
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("mosquitto did not listen on %s", addr)
	return ""
}

// freePort is a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// outboundGuard is a loopback HTTP server that answers Netmaker's public
// address lookups (GET /ip: 127.0.0.1) and, as its HTTP and HTTPS proxy,
// refuses every request for another host and notes it.
type outboundGuard struct {
	url string
	mu  sync.Mutex
	got []string
}

func startOutboundGuard(t *testing.T) *outboundGuard {
	t.Helper()
	g := &outboundGuard{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A proxied request names its target: CONNECT host:port for
		// HTTPS, an absolute URL for HTTP.
		if r.Method == http.MethodConnect || r.URL.IsAbs() {
			g.mu.Lock()
			g.got = append(g.got, r.Method+" "+r.Host)
			g.mu.Unlock()
			http.Error(w, "this test reaches nothing beyond this machine", http.StatusForbidden)
			return
		}
		if r.Method == http.MethodGet && r.URL.Path == "/ip" {
			io.WriteString(w, "127.0.0.1")
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	g.url = srv.URL
	return g
}

// refused lists the requests for other hosts that the guard refused.
func (g *outboundGuard) refused() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.got...)
}
