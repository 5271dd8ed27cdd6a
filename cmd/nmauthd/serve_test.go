package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nmauth/nmauth"
)

func newTestAuthenticator(t *testing.T) *nmauth.Authenticator {
	t.Helper()
	return newWireAuthenticator(t, nmauth.WireSpec)
}

// newWireAuthenticator is newTestAuthenticator answering in wire profile w.
func newWireAuthenticator(t *testing.T, w nmauth.WireProfile) *nmauth.Authenticator {
	t.Helper()
	mk, err := nmauth.NewMasterKey(testMasterKey, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := nmauth.New(nmauth.Config{
		Store:     nmauth.NewMemoryStore(),
		Secrets:   [][]byte{bytes.Repeat([]byte{7}, 32)},
		MasterKey: mk,
		Wire:      w,
	})
	if err != nil {
		t.Fatal(err)
	}
	return auth
}

// TestMux checks the routes nmauthd adds beside the library's handler.
func TestMux(t *testing.T) {
	var logBuf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logBuf, nil))
	srv := httptest.NewServer(logRequests(log, newMux(newTestAuthenticator(t), nmauth.WireSpec)))
	defer srv.Close()

	cases := []struct {
		name, method, path, bearer string
		status                     int
		body                       string
	}{
		{"healthz needs no bearer", "GET", "/healthz", "", 200, "ok\n"},
		{"whoami needs a bearer", "GET", "/api/whoami", "", 401, ""},
		{"whoami refuses a wrong bearer", "GET", "/api/whoami", "not-the-master-key", 401, ""},
		{"whoami with the master key", "GET", "/api/whoami", testMasterKey, 200, `{"kind":"master"}` + "\n"},
		{"whoami is GET only", "POST", "/api/whoami", testMasterKey, 404, ""},
		{"the library's routes are mounted", "POST", "/api/users/adm/authenticate", "", 415, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := callURL(t, nmauth.WireSpec, tc.method, srv.URL+tc.path, tc.bearer, nil)
			if r.status != tc.status || tc.body != "" && string(r.body) != tc.body {
				t.Errorf("status %d body %q, want %d %q", r.status, r.body, tc.status, tc.body)
			}
		})
	}
	if strings.Contains(logBuf.String(), testMasterKey) || strings.Contains(logBuf.String(), "not-the-master-key") {
		t.Error("the request log contains a bearer credential")
	}
	var lines int
	for _, line := range strings.Split(strings.TrimSpace(logBuf.String()), "\n") {
		var rec struct {
			Msg, Method, Path, Remote string
			Status                    int
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Msg != "request" || rec.Method == "" || rec.Path == "" || rec.Remote == "" || rec.Status == 0 {
			t.Errorf("request line %q", line)
		}
		lines++
	}
	if lines != len(cases) {
		t.Errorf("%d request lines for %d requests", lines, len(cases))
	}
}

func TestCheckLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:8081": true, "127.0.0.2:0": true, "[::1]:8081": true, "localhost:8081": true,
		"0.0.0.0:8081": false, ":8081": false, "[::]:8081": false, "10.0.0.1:8081": false, "example.com:80": false, "127.0.0.1": false,
	} {
		if err := checkLoopback(addr); (err == nil) != ok {
			t.Errorf("checkLoopback(%q) = %v, want ok=%v", addr, err, ok)
		}
	}
}

// TestHTTPServerTimeouts: without them a slow client holds a connection
// and its goroutine for as long as it likes.
func TestHTTPServerTimeouts(t *testing.T) {
	s := newHTTPServer(http.NotFoundHandler(), slog.Default())
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.WriteTimeout <= 0 || s.IdleTimeout <= 0 || s.MaxHeaderBytes <= 0 {
		t.Errorf("timeouts not all set: %+v", s)
	}
	if s.ReadHeaderTimeout > s.ReadTimeout {
		t.Errorf("ReadHeaderTimeout %v above ReadTimeout %v", s.ReadHeaderTimeout, s.ReadTimeout)
	}
}
