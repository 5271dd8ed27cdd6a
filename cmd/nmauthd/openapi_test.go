package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/openapitest"
)

// checkers check exchanges against nmauthd's document of each profile,
// each built once.
var checkers = map[nmauth.WireProfile]func() (*openapitest.Checker, error){
	nmauth.WireSpec:     sync.OnceValues(func() (*openapitest.Checker, error) { return openapitest.New(openAPI(nmauth.WireSpec)) }),
	nmauth.WireNetmaker: sync.OnceValues(func() (*openapitest.Checker, error) { return openapitest.New(openAPI(nmauth.WireNetmaker)) }),
}

// checkOpenAPI fails the test when an exchange with a server answering in
// profile wire departs from nmauthd's document of that profile.
func checkOpenAPI(t *testing.T, wire nmauth.WireProfile, req *http.Request, sent []byte, r reply) {
	t.Helper()
	c, err := checkers[wire]()
	if err != nil {
		t.Fatal(err)
	}
	x := openapitest.Exchange{Request: req, RequestBody: sent, Status: r.status, Header: r.header, Body: r.body}
	if err := c.Check(x); err != nil {
		t.Errorf("the exchange departs from the %s OpenAPI document: %v", wire, err)
	}
}

// TestOpenAPIServed checks, in each profile, that GET /openapi.yaml
// answers that profile's document, the one the tests check against, and
// that it describes the routes nmauthd serves in that profile.
func TestOpenAPIServed(t *testing.T) {
	routes := []string{"/api/hosts/adm/authenticate:", "/api/users/adm/authenticate:",
		"/api/users/{username}/auth/init-totp:", "/api/users/{username}/auth/complete-totp:",
		"/api/users/{username}/auth/verify-totp:", "/api/nodes/{network}/authenticate:",
		"/api/whoami:", "/healthz:", "/readyz:", "/openapi.yaml:",
		"/api/admin/users:", "/api/admin/hosts:", "/api/admin/users/{username}/disable:",
		"/api/admin/users/{username}/enable:", "/api/admin/users/{username}/totp-reset:",
		"/api/admin/hosts/{id}/disable:", "/api/admin/hosts/{id}/enable:"}
	const netmakerOnly = "/api/nodes/adm/{network}/authenticate:"
	served := map[nmauth.WireProfile]string{}
	for _, wire := range []nmauth.WireProfile{nmauth.WireSpec, nmauth.WireNetmaker} {
		t.Run(wire.String(), func(t *testing.T) {
			srv := httptest.NewServer(newMux(newWireAuthenticator(t, wire), wire))
			defer srv.Close()
			r := callURL(t, wire, "GET", srv.URL+"/openapi.yaml", "", nil)
			if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/yaml" || string(r.body) != string(openAPI(wire)) {
				t.Fatalf("GET /openapi.yaml: %d %q, %d bytes", r.status, r.header.Get("Content-Type"), len(r.body))
			}
			doc := string(r.body)
			served[wire] = doc
			for _, route := range routes {
				if !strings.Contains(doc, "\n  "+route+"\n") {
					t.Errorf("the document has no path %s", route)
				}
			}
			if got, want := strings.Contains(doc, "\n  "+netmakerOnly+"\n"), wire == nmauth.WireNetmaker; got != want {
				t.Errorf("the document has path %s: %v, want %v", netmakerOnly, got, want)
			}
		})
	}
	if served[nmauth.WireSpec] == served[nmauth.WireNetmaker] {
		t.Error("both profiles serve the same document")
	}
}

// TestOutsideTheHandlerTheEnvelope asks nmauthd, in each profile, for
// paths no route serves and for its GET routes with other methods: the
// answers are the error envelope of that profile, as the document says,
// not ServeMux's plain text.
func TestOutsideTheHandlerTheEnvelope(t *testing.T) {
	cases := []struct {
		method, path string
		status       int
	}{
		{"GET", "/nowhere", http.StatusNotFound},
		{"POST", "/nowhere/deeper", http.StatusNotFound},
		{"POST", "/healthz", http.StatusMethodNotAllowed},
		{"DELETE", "/readyz", http.StatusMethodNotAllowed},
		{"PUT", "/openapi.yaml", http.StatusMethodNotAllowed},
		{"POST", "/", http.StatusMethodNotAllowed},
		{"POST", "/assets/app.js", http.StatusMethodNotAllowed},
	}
	for _, wire := range []nmauth.WireProfile{nmauth.WireSpec, nmauth.WireNetmaker} {
		t.Run(wire.String(), func(t *testing.T) {
			srv := httptest.NewServer(newMux(newWireAuthenticator(t, wire), wire))
			defer srv.Close()
			for _, c := range cases {
				r := callURL(t, wire, c.method, srv.URL+c.path, "", nil)
				where := c.method + " " + c.path
				if r.status != c.status || r.header.Get("Content-Type") != "application/json" {
					t.Errorf("%s: %d %q, want %d application/json; body %s", where, r.status, r.header.Get("Content-Type"), c.status, r.body)
					continue
				}
				if allow := r.header.Get("Allow"); (c.status == http.StatusMethodNotAllowed) != (allow == "GET, HEAD") {
					t.Errorf("%s: %d with Allow %q", where, r.status, allow)
				}
				var env map[string]any
				if err := json.Unmarshal(r.body, &env); err != nil {
					t.Fatalf("%s: %s: %v", where, r.body, err)
				}
				want := map[string]any{"code": float64(c.status)}
				if wire == nmauth.WireNetmaker {
					want = map[string]any{"Code": float64(c.status), "Response": nil}
				}
				for k, v := range want {
					if got, ok := env[k]; !ok || got != v {
						t.Errorf("%s: %s is %v, want %v; body %s", where, k, got, v, r.body)
					}
				}
			}
			// The routes themselves still answer.
			for _, path := range []string{"/healthz", "/readyz"} {
				if r := callURL(t, wire, "GET", srv.URL+path, "", nil); r.status != http.StatusOK || string(r.body) != "ok\n" {
					t.Errorf("GET %s: %d %s", path, r.status, r.body)
				}
			}
		})
	}
}

// TestMergeOpenAPIRefusesAClash: nmauthd's part may add paths and
// components, never redefine the library's.
func TestMergeOpenAPIRefusesAClash(t *testing.T) {
	base := []byte("openapi: 3.1.0\ninfo:\n  description: base\npaths:\n  /a:\n    get: {}\ncomponents:\n  schemas:\n    A: {type: string}\n")
	for _, part := range []string{
		"paths:\n  /a:\n    post: {}\n",
		"components:\n  schemas:\n    A: {type: integer}\n",
	} {
		if _, err := mergeOpenAPI(base, []byte(part)); err == nil {
			t.Errorf("merging %q: no error", part)
		}
	}
	doc, err := mergeOpenAPI(base, []byte("info:\n  description: \" and more\"\npaths:\n  /b:\n    get: {}\ncomponents:\n  schemas:\n    B: {type: string}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\n  /a:", "\n  /b:", "\n    A:", "\n    B:", "base and more"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("merged document lacks %q:\n%s", want, doc)
		}
	}
}
