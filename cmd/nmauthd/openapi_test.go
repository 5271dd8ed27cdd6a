package main

import (
	"github.com/nmauth/nmauth"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/nmauth/nmauth/openapitest"
)

// document is the checker of the document nmauthd serves, built once: the
// tests' request helper checks every exchange against it.
var document = sync.OnceValues(func() (*openapitest.Checker, error) {
	return openapitest.New(nmauth.OpenAPI(nmauth.WireSpec))
})

// checkOpenAPI fails the test when an exchange departs from the document.
func checkOpenAPI(t *testing.T, req *http.Request, sent []byte, r reply) {
	t.Helper()
	c, err := document()
	if err != nil {
		t.Fatal(err)
	}
	x := openapitest.Exchange{Request: req, RequestBody: sent, Status: r.status, Header: r.header, Body: r.body}
	if err := c.Check(x); err != nil {
		t.Errorf("the exchange departs from the OpenAPI document: %v", err)
	}
}

// TestOpenAPIServed checks that GET /openapi.yaml answers the document the
// tests check against, and that it describes the routes nmauthd serves.
func TestOpenAPIServed(t *testing.T) {
	srv := httptest.NewServer(newMux(newTestAuthenticator(t), nmauth.WireSpec))
	defer srv.Close()
	r := callURL(t, "GET", srv.URL+"/openapi.yaml", "", nil)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/yaml" || string(r.body) != string(nmauth.OpenAPI(nmauth.WireSpec)) {
		t.Fatalf("GET /openapi.yaml: %d %q, %d bytes", r.status, r.header.Get("Content-Type"), len(r.body))
	}
	for _, route := range []string{"/api/hosts/adm/authenticate:", "/api/users/adm/authenticate:",
		"/api/users/{username}/auth/init-totp:", "/api/users/{username}/auth/complete-totp:",
		"/api/users/{username}/auth/verify-totp:", "/api/whoami:", "/healthz:", "/openapi.yaml:"} {
		if !strings.Contains(string(r.body), "\n  "+route+"\n") {
			t.Errorf("the document has no path %s", route)
		}
	}
}
