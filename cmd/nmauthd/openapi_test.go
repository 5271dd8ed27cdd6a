package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/openapitest"
)

// documents are the checkers of each profile's document, each built once:
// the tests' request helper checks every exchange with a server against
// the document of the profile that server answers in.
var documents = map[nmauth.WireProfile]func() (*openapitest.Checker, error){
	nmauth.WireSpec: sync.OnceValues(func() (*openapitest.Checker, error) {
		return openapitest.New(nmauth.OpenAPI(nmauth.WireSpec))
	}),
	nmauth.WireNetmaker: sync.OnceValues(func() (*openapitest.Checker, error) {
		return openapitest.New(nmauth.OpenAPI(nmauth.WireNetmaker))
	}),
}

// checkOpenAPI fails the test when an exchange with a server answering in
// profile wire departs from that profile's document.
func checkOpenAPI(t *testing.T, wire nmauth.WireProfile, req *http.Request, sent []byte, r reply) {
	t.Helper()
	document, ok := documents[wire]
	if !ok {
		t.Fatalf("no OpenAPI document for wire profile %v", wire)
	}
	c, err := document()
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
		"/api/whoami:", "/healthz:", "/openapi.yaml:"}
	const netmakerOnly = "/api/nodes/adm/{network}/authenticate:"
	served := map[nmauth.WireProfile]string{}
	for _, wire := range []nmauth.WireProfile{nmauth.WireSpec, nmauth.WireNetmaker} {
		t.Run(wire.String(), func(t *testing.T) {
			srv := httptest.NewServer(newMux(newTestAuthenticator(t), wire))
			defer srv.Close()
			r := callURL(t, wire, "GET", srv.URL+"/openapi.yaml", "", nil)
			if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/yaml" || string(r.body) != string(nmauth.OpenAPI(wire)) {
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
