package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestCORSOriginExact: nmauthd serve refuses a --cors-origin that is not
// one exact origin, with the reason, before it opens the database or
// listens; exact origins pass.
func TestCORSOriginExact(t *testing.T) {
	for _, tc := range []struct{ origin, reason string }{
		{"*", "wildcard"},
		{"https://*.example.com", "wildcard"},
		{"null", "not an origin"},
		{"example.com", "not an origin"},
		{"ftp://example.com", "not an origin"},
		{"https://", "not an origin"},
		{"https://ui.example.com/", "without user, path"},
		{"https://ui.example.com/app", "without user, path"},
		{"https://ui.example.com?x=1", "without user, path"},
		{"https://ui.example.com#top", "without user, path"},
		{"https://user@ui.example.com", "without user, path"},
		{"https://ui.example.com:0", "port"},
		{"https://ui.example.com:65536", "port"},
		{"https://ui.example.com:", "port"},
		{"https://ui.example.com:443", "default port 443"},
		{"http://ui.example.com:80", "default port 80"},
		{"https://ui_example.com", "no host name"},
		{"https://ui..example.com", "no host name"},
	} {
		var stderr bytes.Buffer
		dir := t.TempDir()
		c := &cli{stdout: &bytes.Buffer{}, stderr: &stderr, getenv: func(name string) string {
			if name == "MASTER_KEY" {
				return testMasterKey
			}
			return ""
		}}
		exit := make(chan int, 1)
		go func() {
			exit <- c.run([]string{"serve", "--db", dir + "/nmauth.db", "--addr", "127.0.0.1:0",
				"--cors-origin", "https://ok.example.com", "--cors-origin", tc.origin})
		}()
		var code int
		select {
		case code = <-exit:
		case <-time.After(startupLimit):
			t.Fatalf("--cors-origin %q: serve did not stop", tc.origin)
		}
		if code != exitFail || !strings.Contains(stderr.String(), "--cors-origin") || !strings.Contains(stderr.String(), tc.reason) {
			t.Errorf("--cors-origin %q: exit %d, %q; want exit %d and the reason %q", tc.origin, code, stderr.String(), exitFail, tc.reason)
		}
	}
	for _, origin := range []string{"https://ui.example.com", "http://localhost:3000", "https://UI.Example.com:8443",
		"http://127.0.0.1:8080", "http://[::1]:5173", "https://dashboard.netmaker.example"} {
		if err := checkCORSOrigin(origin); err != nil {
			t.Errorf("%q refused: %v", origin, err)
		}
	}
}
