package main

import (
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nmauth/nmauth/sso/ssotest"
)

// TestSSOProviderOutage starts nmauthd while its OpenID provider is down:
// nmauthd serves user and host logins, its SSO routes answer 503 with
// Retry-After, and once the provider comes up at its address an SSO login
// works without a restart. The log says once that discovery fails and once
// that it works.
func TestSSOProviderOutage(t *testing.T) {
	addr, opAddr := freeAddr(t), freeAddr(t)
	callback := "http://" + addr + "/api/oauth/callback"
	dir := t.TempDir()
	env := baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SSO_CLIENT_SECRET=sso-client-secret")
	db := filepath.Join(dir, "nmauth.db")
	a := seed(t, dir, env, db)
	d := startDaemon(t, dir, env, "--db", db, "--addr", addr, "--log-json", "--sso-issuer", "http://"+opAddr,
		"--sso-client-id", "nmauthd-outage", "--sso-redirect-url", callback, "--sso-create-users")

	// The outage: user and host logins, and the SSO routes, in turns for
	// a few seconds while discovery keeps failing. The turns are paced, as
	// a person's logins are: a client that repeats right logins without
	// pause is throttled like any other (429), which is not what this
	// test is about.
	outage := time.Now()
	var logins, ssoAnswers, minWait, maxWait int
	for time.Since(outage) < 3*time.Second {
		if l := d.loginUser(a.user, a.password); l.AuthToken == "" {
			t.Fatalf("a password login while the provider is down: %+v", l)
		}
		if l := d.loginHost(a.host, a.mac, a.hostPassword); l.AuthToken == "" {
			t.Fatalf("a host login while the provider is down: %+v", l)
		}
		logins += 2
		for _, path := range []string{"/api/oauth/login", "/api/oauth/headless"} {
			r := d.call("GET", path, "", nil)
			ra, err := strconv.Atoi(r.header.Get("Retry-After"))
			if r.status != http.StatusServiceUnavailable || err != nil || ra < 1 {
				t.Fatalf("GET %s while the provider is down: %d, Retry-After %q; want 503 with Retry-After", path, r.status, r.header.Get("Retry-After"))
			}
			if ssoAnswers++; ssoAnswers == 1 || ra < minWait {
				minWait = ra
			}
			maxWait = max(maxWait, ra)
		}
		time.Sleep(250 * time.Millisecond)
	}
	down := time.Since(outage)

	issuer := ssotest.StartAt(t, opAddr, ssoUsers, "nmauthd-outage", "sso-client-secret", callback)
	up := time.Now()
	waitSSO(t, d)
	recovered := time.Since(up)
	if got := ssoLogin(t, d.url, issuer, "ann", "op-password-1"); got != "ann" {
		t.Fatalf("the SSO login after the provider came up logged in as %q", got)
	}
	t.Logf("provider down %.1f s: %d user and host logins, all 200; %d SSO answers, all 503 with Retry-After %d to %d s; "+
		"SSO served %.2f s after the provider came up", down.Seconds(), logins, ssoAnswers, minWait, maxWait, recovered.Seconds())
	var fails, works int
	for _, rec := range logRecords(t, d.stderr.String()) {
		msg, _ := rec["msg"].(string)
		switch {
		case strings.Contains(msg, "discovery fails"):
			fails++
		case strings.Contains(msg, "discovery works"):
			works++
		}
	}
	if fails != 1 || works != 1 {
		t.Fatalf("the log says %d times that discovery fails and %d that it works, want once each:\n%s", fails, works, d.stderr.String())
	}
}

// TestSSOClientSecretChecked: nmauthd refuses to start a confidential
// client without its secret, naming the variable, and a public client
// with one; --sso-public-client serves a public client's logins with no
// secret at all; --help lists the variable.
func TestSSOClientSecretChecked(t *testing.T) {
	addr := freeAddr(t)
	callback := "http://" + addr + "/api/oauth/callback"
	dir := t.TempDir()
	db := filepath.Join(dir, "nmauth.db")
	env := baseEnv("MASTER_KEY=" + testMasterKey)
	seed(t, dir, env, db)
	sso := []string{"serve", "--db", db, "--addr", addr, "--sso-issuer", "http://127.0.0.1:1", "--sso-client-id", "c", "--sso-redirect-url", callback}
	r := runNmauthd(t, dir, env, "", sso...)
	if r.code != exitFail || !strings.Contains(r.stderr, "NMAUTH_SSO_CLIENT_SECRET") || !strings.Contains(r.stderr, "--sso-public-client") {
		t.Fatalf("serve of a confidential client without its secret: exit %d\n%s", r.code, r.stderr)
	}
	r = runNmauthd(t, dir, append(env, "NMAUTH_SSO_CLIENT_SECRET=s"), "", append(sso, "--sso-public-client")...)
	if r.code != exitFail || !strings.Contains(r.stderr, "public client has no secret") {
		t.Fatalf("serve of a public client with a secret: exit %d\n%s", r.code, r.stderr)
	}
	if out := mustRun(t, dir, env, "", "--help"); !strings.Contains(out, "NMAUTH_SSO_CLIENT_SECRET") || !strings.Contains(out, "--sso-public-client") {
		t.Fatalf("--help does not list NMAUTH_SSO_CLIENT_SECRET and --sso-public-client:\n%s", out)
	}

	issuer := ssotest.Start(t, ssoUsers, "nmauthd-public", "", callback)
	d := startDaemon(t, dir, env, "--db", db, "--addr", addr, "--sso-issuer", issuer, "--sso-client-id", "nmauthd-public",
		"--sso-redirect-url", callback, "--sso-create-users", "--sso-public-client")
	waitSSO(t, d)
	if got := ssoLogin(t, d.url, issuer, "ann", "op-password-1"); got != "ann" {
		t.Fatalf("a public client's SSO login logged in as %q", got)
	}
}

// waitSSO waits until nmauthd has read its provider's discovery: its
// GET /api/oauth/login then leads to the provider's login page instead of
// answering 503.
func waitSSO(t *testing.T, d *daemon) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(d.url + "/api/oauth/login")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after the provider came up, /api/oauth/login still answers 503\n%s", d.stderr.String())
		}
	}
}
