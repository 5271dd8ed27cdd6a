package nmauth_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nmauth/nmauth"
)

// requireCredentials are one bearer credential of each kind, and two that
// are not credentials at all.
type requireCredentials struct {
	auth                     *nmauth.Authenticator
	master, user, host, node string
}

func newRequireCredentials(t testing.TB, wire nmauth.WireProfile) requireCredentials {
	t.Helper()
	secret := make([]byte, 32)
	rand.Read(secret)
	masterKey := hex.EncodeToString(secret[:24])
	mk, err := nmauth.NewMasterKey(masterKey, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{secret}, MasterKey: mk, Wire: wire, ClientRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const hostID = "5f0e6a52-6a3b-4c55-9d8e-2b1f0c7d9a11"
	if err := auth.Admin().CreateUser(ctx, "alice", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	if err := auth.Admin().CreateHost(ctx, hostID, "", "host password of some length"); err != nil {
		t.Fatal(err)
	}
	user, err := auth.LoginUser(ctx, "alice", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	host, err := auth.LoginHost(ctx, hostID, "", "host password of some length")
	if err != nil {
		t.Fatal(err)
	}
	node, err := auth.IssueNodeToken(ctx, "net-1", "node-1")
	if err != nil {
		t.Fatal(err)
	}
	return requireCredentials{auth: auth, master: masterKey, user: user.AuthToken, host: host.AuthToken, node: node}
}

// serveBearer runs h on a request with an optional bearer credential.
func serveBearer(h http.Handler, bearer string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/app", nil)
	req.RemoteAddr = "192.0.2.1:1"
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestRequire checks the one-step guard, alone and in both orders with
// Middleware: a wrong order changes no answer. 401 (with WWW-Authenticate)
// is for no credential or a bad one only; a valid credential of another
// kind is 403.
func TestRequire(t *testing.T) {
	for _, wire := range []nmauth.WireProfile{nmauth.WireSpec, nmauth.WireNetmaker} {
		t.Run(wire.String(), func(t *testing.T) {
			c := newRequireCredentials(t, wire)
			var seen nmauth.Principal
			app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen, _ = nmauth.FromContext(r.Context())
				w.WriteHeader(http.StatusNoContent)
			})
			usersOnly := c.auth.Require(nmauth.KindUser, nmauth.KindMaster)
			guards := map[string]http.Handler{
				"Require alone":           usersOnly(app),
				"Middleware then Require": c.auth.Middleware(usersOnly(app)),
				"Require then Middleware": usersOnly(c.auth.Middleware(app)),
				"Require then Require":    c.auth.Require(nmauth.KindUser, nmauth.KindMaster, nmauth.KindHost)(usersOnly(app)),
			}
			cases := []struct {
				name, bearer string
				status       int
				kind         nmauth.PrincipalKind
			}{
				{"user token", c.user, http.StatusNoContent, nmauth.KindUser},
				{"master key", c.master, http.StatusNoContent, nmauth.KindMaster},
				{"host token", c.host, http.StatusForbidden, ""},
				{"node token", c.node, http.StatusForbidden, ""},
				{"no bearer", "", http.StatusUnauthorized, ""},
				{"forged bearer", c.user[:len(c.user)-4] + "AAAA", http.StatusUnauthorized, ""},
			}
			for gname, h := range guards {
				for _, tc := range cases {
					seen = nmauth.Principal{}
					rec := serveBearer(h, tc.bearer)
					if rec.Code != tc.status {
						t.Errorf("%s, %s: status %d, want %d", gname, tc.name, rec.Code, tc.status)
						continue
					}
					if got := rec.Header().Get("WWW-Authenticate"); (tc.status == http.StatusUnauthorized) != (got != "") {
						t.Errorf("%s, %s: WWW-Authenticate %q with status %d", gname, tc.name, got, rec.Code)
					}
					if tc.kind != "" && seen.Kind != tc.kind {
						t.Errorf("%s, %s: the handler saw principal %+v, want kind %s", gname, tc.name, seen, tc.kind)
					}
				}
			}
		})
	}
}

// TestRequireRefusesNoKinds checks that a guard that would admit nobody,
// or names a kind that does not exist, fails loudly when it is built.
func TestRequireRefusesNoKinds(t *testing.T) {
	c := newRequireCredentials(t, nmauth.WireSpec)
	for _, kinds := range [][]nmauth.PrincipalKind{nil, {"users"}, {nmauth.KindUser, "Master"}} {
		t.Run(fmt.Sprint(kinds), func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("Require(%q) did not panic", kinds)
				}
			}()
			c.auth.Require(kinds...)
		})
	}
}

// TestRequireTakesThePrincipalInTheContext checks that a Principal the
// Middleware put in the context is taken as it is: the bearer is not
// checked twice, so Require admits by the context even once the header is
// gone.
func TestRequireTakesThePrincipalInTheContext(t *testing.T) {
	c := newRequireCredentials(t, nmauth.WireSpec)
	guard := c.auth.Require(nmauth.KindHost)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	h := c.auth.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Authorization")
		guard.ServeHTTP(w, r)
	}))
	for _, tc := range []struct {
		bearer string
		status int
	}{
		{c.host, http.StatusNoContent},
		{c.user, http.StatusForbidden},
	} {
		if rec := serveBearer(h, tc.bearer); rec.Code != tc.status {
			t.Errorf("bearer %.12s…: status %d, want %d", tc.bearer, rec.Code, tc.status)
		}
	}
}

// TestRequireAllocations: the guard in front of an application's route
// costs the request one allocation once the token is cached: the request
// that carries the Principal and the client, together with its context.
// (TestEventContext checks that an event still names the client.)
func TestRequireAllocations(t *testing.T) {
	c := newRequireCredentials(t, nmauth.WireSpec)
	var got nmauth.Principal
	h := c.auth.Require(nmauth.KindUser)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = nmauth.FromContext(r.Context())
	}))
	req := httptest.NewRequest(http.MethodGet, "/app", nil)
	req.RemoteAddr = "192.0.2.1:1"
	req.Header.Set("Authorization", "Bearer "+c.user)
	var w http.ResponseWriter = httptest.NewRecorder()
	for range 2 { // the token cache takes a token on its second check
		h.ServeHTTP(w, req)
	}
	if allocs := testing.AllocsPerRun(100, func() { h.ServeHTTP(w, req) }); allocs > 1 {
		t.Errorf("%v allocations per request through Require, want at most 1", allocs)
	}
	if got.Kind != nmauth.KindUser || got.Name != "alice" {
		t.Errorf("the route saw %+v", got)
	}

}

// BenchmarkRequire serves one route of an application bare ("open") and
// behind Require(KindUser) with a cached user token ("users"), without a
// network, so that the difference is what the guard adds to a request:
//
//	go test -run '^$' -bench Require -benchmem -count 5 .
func BenchmarkRequire(b *testing.B) {
	c := newRequireCredentials(b, nmauth.WireSpec)
	app := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"networks":[]}` + "\n"))
	})
	for _, route := range []struct {
		name string
		h    http.Handler
	}{{"open", app}, {"users", c.auth.Require(nmauth.KindUser)(app)}} {
		b.Run(route.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/app", nil)
			req.RemoteAddr = "192.0.2.1:1"
			req.Header.Set("Authorization", "Bearer "+c.user)
			w := httptest.NewRecorder()
			route.h.ServeHTTP(w, req)
			route.h.ServeHTTP(w, req)
			b.ReportAllocs()
			for b.Loop() {
				w.Body.Reset()
				route.h.ServeHTTP(w, req)
			}
		})
	}
}

// TestRequireHandsOverThePrincipal checks that the handler behind Require
// or Middleware sees the very Principal CheckBearer gives for the same
// credential, when the token is checked in full and when it comes from the
// token cache (which takes a token on its second check).
func TestRequireHandsOverThePrincipal(t *testing.T) {
	c := newRequireCredentials(t, nmauth.WireSpec)
	var seen nmauth.Principal
	var found bool
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, found = nmauth.FromContext(r.Context())
		w.WriteHeader(http.StatusNoContent)
	})
	guards := map[string]http.Handler{
		"Require":    c.auth.Require(nmauth.KindMaster, nmauth.KindUser, nmauth.KindHost, nmauth.KindNode)(app),
		"Middleware": c.auth.Middleware(app),
	}
	for name, bearer := range map[string]string{"user": c.user, "host": c.host, "node": c.node, "master": c.master} {
		want, err := c.auth.CheckBearer(context.Background(), bearer)
		if err != nil {
			t.Fatalf("%s: CheckBearer: %v", name, err)
		}
		if want.Kind == nmauth.KindUser && want.Name != "alice" {
			t.Fatalf("%s: CheckBearer gave %+v", name, want)
		}
		for gname, h := range guards {
			for i := range 3 {
				seen, found = nmauth.Principal{}, false
				if rec := serveBearer(h, bearer); rec.Code != http.StatusNoContent {
					t.Fatalf("%s, %s, request %d: status %d", gname, name, i, rec.Code)
				}
				if !found || seen.Kind != want.Kind || seen.Name != want.Name || seen.Network != want.Network ||
					seen.TOTP != want.TOTP || seen.TokenID != want.TokenID ||
					!seen.IssuedAt.Equal(want.IssuedAt) || !seen.ExpiresAt.Equal(want.ExpiresAt) {
					t.Errorf("%s, %s, request %d: the handler saw %+v (found %v), want %+v", gname, name, i, seen, found, want)
				}
			}
		}
	}
}

// TestBearerTokenVisibleASCII checks BearerToken's reading of the
// credential's bytes, eight at a time, against the rule byte by byte:
// every byte value at every place of credentials of 1 to 24 bytes.
func TestBearerTokenVisibleASCII(t *testing.T) {
	for n := 1; n <= 24; n++ {
		for at := range n {
			for b := range 256 {
				cred := []byte(strings.Repeat("a", n))
				cred[at] = byte(b)
				want := strings.TrimLeft(string(cred), " ")
				valid := want != ""
				for _, c := range []byte(want) {
					valid = valid && c >= 0x21 && c <= 0x7e
				}
				got, err := nmauth.BearerToken(http.Header{"Authorization": {"Bearer " + string(cred)}})
				if valid && (err != nil || got != want) || !valid && err == nil {
					t.Fatalf("credential %q: got %q, %v; want valid %v", cred, got, err, valid)
				}
			}
		}
	}
}
