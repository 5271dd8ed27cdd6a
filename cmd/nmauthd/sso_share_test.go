package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/nmauth/nmauth/sso/ssotest"
)

// fromAddr is an HTTP client that connects from the loopback address ip
// (any of 127.0.0.0/8), so that a test speaks from many client groups,
// and stops at every redirect.
func fromAddr(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// wantNetmaker429 checks a refusal past a client group's share: 429 with
// Retry-After, in Netmaker's envelope as nmauthd's other 429s are.
func wantNetmaker429(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var env struct {
		Code    int
		Message string
	}
	err := json.Unmarshal(body, &env)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || err != nil ||
		env.Code != http.StatusTooManyRequests || env.Message == "" || !strings.Contains(string(body), `"Code":429`) {
		t.Fatalf("%s: %d, Retry-After %q, body %s; want 429 with Retry-After in Netmaker's envelope",
			what, resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}

// TestSSOSharesByClientGroup runs nmauthd with single sign-on and the
// netmaker wire profile. A client group (IPv4 /24) holds at most 8
// headless websockets: the 9th from one address gets 429, and a terminal
// of another /24 still gets its provider's URL. It holds at most 100
// pending browser logins: six addresses of one /24 begin 20 each (each
// within its own per-address limit), about 100 begin and the rest get
// 429, and an address of another /24 still begins one.
func TestSSOSharesByClientGroup(t *testing.T) {
	addr := freeAddr(t)
	callback := "http://" + addr + "/api/oauth/callback"
	issuer := ssotest.Start(t, ssoUsers, "nmauthd-shares", "sso-client-secret", callback)
	dir := t.TempDir()
	env := baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SSO_CLIENT_SECRET=sso-client-secret")
	db := filepath.Join(dir, "nmauth.db")
	seed(t, dir, env, db)
	d := startDaemon(t, dir, env, "--db", db, "--addr", addr, "--wire", "netmaker", "--sso-issuer", issuer,
		"--sso-client-id", "nmauthd-shares", "--sso-redirect-url", callback)
	waitSSO(t, d)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	ws := "ws://" + addr + "/api/oauth/headless"
	dial := func(ip string) (*websocket.Conn, *http.Response, error) {
		return websocket.Dial(ctx, ws, &websocket.DialOptions{HTTPClient: fromAddr(ip)})
	}
	for i := range 8 {
		conn, _, err := dial("127.0.0.1")
		if err != nil {
			t.Fatalf("headless login %d from one address: %v", i+1, err)
		}
		defer conn.CloseNow()
		if _, first, err := conn.Read(ctx); err != nil || !strings.HasPrefix(string(first), issuer) {
			t.Fatalf("headless login %d: %q, %v", i+1, first, err)
		}
	}
	if _, resp, err := dial("127.0.0.1"); err == nil || resp == nil {
		t.Fatalf("headless login 9 from one address: %v, want 429", err)
	} else {
		wantNetmaker429(t, "headless login 9 from one address", resp)
	}
	conn, _, err := dial("127.0.1.1")
	if err != nil {
		t.Fatalf("a headless login from another /24: %v", err)
	}
	defer conn.CloseNow()
	if _, first, err := conn.Read(ctx); err != nil || !strings.HasPrefix(string(first), issuer) {
		t.Fatalf("a headless login from another /24: %q, %v", first, err)
	}

	begun := 0
	for n := range 6 {
		client := fromAddr(fmt.Sprintf("127.0.3.%d", n+1))
		for range 20 {
			resp, err := client.Get(d.url + "/api/oauth/login")
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode == http.StatusFound {
				begun++
				resp.Body.Close()
				continue
			}
			wantNetmaker429(t, "a browser login past its group's share", resp)
		}
	}
	// The share shrinks a little as the table fills: the 10 pending
	// logins of the websockets and of waitSSO leave the group 99.
	if begun < 95 || begun > 100 {
		t.Errorf("six addresses of one /24 began %d browser logins, want their share, 100 or a little less", begun)
	}
	resp, err := fromAddr("127.0.4.1").Get(d.url + "/api/oauth/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Errorf("a browser login from another /24: %d, want 302", resp.StatusCode)
	}
}
