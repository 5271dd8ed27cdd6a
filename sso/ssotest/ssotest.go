// Package ssotest runs a real OpenID provider for the tests of an
// application that uses package sso: zitadel/oidc's op package, a
// certified implementation, with its example storage and login page,
// over loopback. Only tests should import it.
package ssotest

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
)

// User is a user of the provider. Subject is the identity's sub claim,
// Name its preferred_username and what the login page asks for.
type User struct {
	Subject, Name, Password, Email string
	EmailVerified                  bool
}

// Start runs a provider with users and one client, clientID, whose
// redirect URI is redirectURL, until t ends, and returns its issuer. With
// a secret the client is a confidential web client; with "" it is a
// public (native) one, whose logins PKCE alone proves. The example storage
// keeps its clients for the whole process: give each test its own
// clientID.
func Start(t testing.TB, users []User, clientID, secret, redirectURL string) string {
	t.Helper()
	return StartAt(t, "127.0.0.1:0", users, clientID, secret, redirectURL)
}

// StartAt is Start listening at addr, so that a test can name the
// provider's issuer, http://addr, before the provider is up.
func StartAt(t testing.TB, addr string, users []User, clientID, secret, redirectURL string) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String()
	file := map[string]map[string]any{}
	for _, u := range users {
		file[u.Subject] = map[string]any{"ID": u.Subject, "Username": u.Name, "Password": u.Password,
			"Email": u.Email, "EmailVerified": u.EmailVerified, "PreferredLanguage": "en"}
	}
	b, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "users.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := storage.StoreFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	client := storage.WebClient(clientID, secret, redirectURL)
	if secret == "" {
		client = storage.NativeClient(clientID, redirectURL)
	}
	storage.RegisterClients(client)
	srv := httptest.NewUnstartedServer(exampleop.SetupServer(issuer, storage.NewStorage(store), nil, false))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return issuer
}

var authRequestID = regexp.MustCompile(`name="id" value="([^"]+)"`)

// Browser is a client with cookies, as a browser without JavaScript.
type Browser struct {
	Client *http.Client
}

// NewBrowser returns a browser that follows redirects.
func NewBrowser() *Browser {
	jar, _ := cookiejar.New(nil)
	return &Browser{Client: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

// Login goes to start, which leads to the provider's login page (the
// application's /api/oauth/login, or the URL a headless login sent), logs
// in there as name with password, and follows the redirects back. It
// returns the last response, its body read and closed.
func (b *Browser) Login(t testing.TB, issuer, start, name, password string) (*http.Response, []byte) {
	t.Helper()
	resp, err := b.Client.Get(start)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := authRequestID.FindSubmatch(body)
	if m == nil {
		t.Fatalf("no login form at the provider after %s: %.300s", start, body)
	}
	resp, err = b.Client.PostForm(issuer+"/login/username", url.Values{"id": {string(m[1])}, "username": {name}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, body
}
