package tests_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/sso"
	"github.com/nmauth/nmauth/sso/ssotest"
)

// syncBuffer is a log destination that the discovery goroutine and the
// test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// outageApp is an application that mounts the routes of an SSO made with
// Open for a provider at addr that is not up.
func outageApp(t *testing.T, addr string, logs *syncBuffer) (*sso.SSO, *httptest.Server, sso.Config) {
	t.Helper()
	ext := new(nmauth.Extension)
	_, err := nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{[]byte("sso-test-root-secret-0123456789abcdef")}, Extensions: []*nmauth.Extension{ext}})
	if err != nil {
		t.Fatal(err)
	}
	appLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := sso.Config{Extension: ext, Store: sso.NewMemoryStore(), Issuer: "http://" + addr,
		ClientID: fmt.Sprintf("nmauth-%d", clients.Add(1)), ClientSecret: "client-secret",
		RedirectURL: "http://" + appLn.Addr().String() + "/api/oauth/callback", CompleteURL: "/done", CreateUsers: true}
	if logs != nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := sso.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/oauth/", s.Handler())
	mux.HandleFunc("/done", func(http.ResponseWriter, *http.Request) {})
	app := httptest.NewUnstartedServer(mux)
	app.Listener.Close()
	app.Listener = appLn
	app.Start()
	t.Cleanup(app.Close)
	return s, app, cfg
}

// wantUnavailable checks that every SSO route answers 503 with a
// Retry-After of whole seconds, in the envelope, and no redirect.
func wantUnavailable(t *testing.T, app *httptest.Server) {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{"/api/oauth/login", "/api/oauth/callback?state=s&code=c", "/api/oauth/headless"} {
		resp, err := client.Get(app.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Code int }
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != http.StatusServiceUnavailable || err != nil || ra < 1 || body.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s while the provider is down: %d, Retry-After %q, body code %d; want 503 with Retry-After",
				path, resp.StatusCode, resp.Header.Get("Retry-After"), body.Code)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(app.URL, "http")+"/api/oauth/headless", nil); err == nil ||
		resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a headless login while the provider is down: %v, want 503", err)
	}
}

// TestOpenBeforeProvider: Open returns while the provider refuses every
// connection; meanwhile the routes answer 503 with Retry-After, and
// discovery is tried again in the background. Once the provider comes up
// at its address, logins work without a restart, and the log holds one
// line for the failure and one for the recovery however many attempts
// failed.
func TestOpenBeforeProvider(t *testing.T) {
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := down.Addr().String()
	var attempts atomic.Int64
	go func() {
		for {
			c, err := down.Accept()
			if err != nil {
				return
			}
			attempts.Add(1)
			c.Close()
		}
	}()
	logs := &syncBuffer{}
	s, app, cfg := outageApp(t, addr, logs)
	wantUnavailable(t, app)
	for deadline := time.Now().Add(time.Minute); attempts.Load() < 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d discoveries in a minute, want them retried", attempts.Load())
		}
	}
	if s.Ready() {
		t.Fatal("Ready with the provider down")
	}
	wantUnavailable(t, app)
	down.Close()

	issuer := ssotest.StartAt(t, addr, opUsers, cfg.ClientID, cfg.ClientSecret, cfg.RedirectURL)
	for deadline := time.Now().Add(time.Minute); !s.Ready(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no discovery a minute after the provider came up; log:\n%s", logs)
		}
	}
	resp, _ := ssotest.NewBrowser().Login(t, issuer, app.URL+"/api/oauth/login", "alice", opPasswords["alice"])
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/done" || !strings.Contains(resp.Request.URL.Fragment, "authToken=") {
		t.Fatalf("the login after the provider came up ended at %s with %d", resp.Request.URL, resp.StatusCode)
	}
	var warns, infos int
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec struct{ Level, Msg, Issuer string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec.Issuer != cfg.Issuer {
			t.Errorf("log line without the issuer: %s", line)
		}
		switch rec.Level {
		case "WARN":
			warns++
		case "INFO":
			infos++
		}
	}
	if warns != 1 || infos != 1 {
		t.Fatalf("%d failed discoveries logged %d warnings and %d infos, want one of each:\n%s", attempts.Load(), warns, infos, logs)
	}
}

// TestOpenDoesNotWait: Open returns though the provider accepts the
// connection and never answers, and the routes answer 503 meanwhile.
func TestOpenDoesNotWait(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			// Read what comes until the client gives up; answer nothing.
			go func() {
				defer c.Close()
				io.Copy(io.Discard, c)
			}()
		}
	}()
	_, app, _ := outageApp(t, silent.Addr().String(), nil)
	wantUnavailable(t, app)
}

// TestClientSecretRequired: a confidential client's secret is required,
// and a public client has none; either mistake is refused by New and Open
// before any request.
func TestClientSecretRequired(t *testing.T) {
	ext := new(nmauth.Extension)
	_, err := nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{[]byte("sso-test-root-secret-0123456789abcdef")}, Extensions: []*nmauth.Extension{ext}})
	if err != nil {
		t.Fatal(err)
	}
	base := sso.Config{Extension: ext, Store: sso.NewMemoryStore(), Issuer: "http://127.0.0.1:1", ClientID: "c",
		RedirectURL: "http://127.0.0.1:2/api/oauth/callback"}
	for name, c := range map[string]struct {
		secret string
		public bool
		want   string
	}{
		"no secret":                {"", false, "ClientSecret"},
		"a public client's secret": {"s", true, "public client"},
	} {
		cfg := base
		cfg.ClientSecret, cfg.PublicClient = c.secret, c.public
		if _, err := sso.Open(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open with %s: %v, want an error naming %s", name, err, c.want)
		}
		if _, err := sso.New(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New with %s: %v, want an error naming %s", name, err, c.want)
		}
	}
}

// TestPublicClient: a client without a secret, said to be public, logs
// in at a provider that knows it as a native client, with PKCE alone.
func TestPublicClient(t *testing.T) {
	w := newWorld(t, func(c *sso.Config) { c.ClientSecret, c.PublicClient = "", true })
	w.link("id1", "alice")
	status, v := newBrowser(t).login(w, "alice")
	if status != http.StatusFound || v.Get("userName") != "alice" || v.Get("authToken") == "" {
		t.Fatalf("a public client's login: %d %v", status, v)
	}
}
