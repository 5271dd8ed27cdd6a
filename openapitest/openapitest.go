// Package openapitest checks HTTP exchanges against an OpenAPI 3.1
// document, such as the one [nmauth.OpenAPI] returns, so that the tests of
// a server fail as soon as an answer drifts from its document.
//
// Build a Checker once (or take the shared one of a wire profile's
// document with [ForProfile]) and pass it every exchange a test makes:
//
//	c, err := openapitest.New(nmauth.OpenAPI(nmauth.WireSpec))
//	...
//	if err := c.Check(openapitest.Exchange{Request: req, RequestBody: sent,
//		Status: resp.StatusCode, Header: resp.Header, Body: got}); err != nil {
//		t.Error(err)
//	}
//
// A request the document allows may get any answer the document lists for
// its operation. A request the document does not allow (a wrong content
// type, a missing bearer, a field of the wrong type) must be refused with
// a 4xx answer that the document lists. A path no operation serves must be
// answered with the document's components.responses.NotFound, or with its
// components.responses.MethodNotAllowed when the path is served for other
// methods. Redirects to a canonical path are not checked.
//
// The package is a module of its own, github.com/nmauth/nmauth/openapitest,
// so that its OpenAPI validator (kin-openapi) never reaches an application
// that imports only the library.
package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/nmauth/nmauth"
)

// profiles holds the checker of each wire profile's document, built on
// first use: loading and validating a document is too slow to repeat for
// every test.
var profiles = map[nmauth.WireProfile]func() (*Checker, error){
	nmauth.WireSpec: sync.OnceValues(func() (*Checker, error) {
		return New(nmauth.OpenAPI(nmauth.WireSpec))
	}),
	nmauth.WireNetmaker: sync.OnceValues(func() (*Checker, error) {
		return New(nmauth.OpenAPI(nmauth.WireNetmaker))
	}),
}

// ForProfile returns the Checker of the document [nmauth.OpenAPI] returns
// for wire profile w, built once per process and shared.
func ForProfile(w nmauth.WireProfile) (*Checker, error) {
	c, ok := profiles[w]
	if !ok {
		return nil, fmt.Errorf("openapitest: no document for wire profile %v", w)
	}
	return c()
}

// Checker checks exchanges against one document. It is safe for
// concurrent use.
type Checker struct {
	doc    *openapi3.T
	router routers.Router
}

// New loads and validates an OpenAPI document.
func New(doc []byte) (*Checker, error) {
	loader := openapi3.NewLoader()
	t, err := loader.LoadFromData(doc)
	if err != nil {
		return nil, fmt.Errorf("openapitest: loading the document: %w", err)
	}
	if !t.IsOpenAPI31OrLater() {
		return nil, fmt.Errorf("openapitest: the document is OpenAPI %s, not 3.1", t.OpenAPI)
	}
	if err := t.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("openapitest: invalid document: %w", err)
	}
	for _, name := range []string{"NotFound", "MethodNotAllowed"} {
		if t.Components == nil || t.Components.Responses[name] == nil {
			return nil, fmt.Errorf("openapitest: the document has no components.responses.%s", name)
		}
	}
	// The router matches paths whatever the host, so a test server on any
	// port is checked against the document's relative paths.
	t.Servers = nil
	r, err := legacy.NewRouter(t)
	if err != nil {
		return nil, fmt.Errorf("openapitest: routing the document: %w", err)
	}
	return &Checker{doc: t, router: r}, nil
}

// Exchange is one request and its answer as the client saw them.
type Exchange struct {
	// Request is the request as sent; its Body is not read.
	Request *http.Request
	// RequestBody is the body that was sent, nil for none.
	RequestBody []byte
	Status      int
	Header      http.Header
	Body        []byte
}

// Check reports how the exchange departs from the document, or nil.
func (c *Checker) Check(x Exchange) error {
	ctx := context.Background()
	path := x.Request.URL.Path
	if isRedirect(x.Status) {
		// net/http's ServeMux sends a client with dot segments or doubled
		// slashes to the canonical path before any route sees it.
		return nil
	}
	req := x.Request.Clone(ctx)
	req.Body = io.NopCloser(bytes.NewReader(x.RequestBody))
	// net/http's ServeMux matches the escaped path, so that "a%2Fb" is one
	// path segment; the router must see the same segments.
	req.URL.Path, req.URL.RawPath = x.Request.URL.EscapedPath(), ""
	route, params, err := c.router.FindRoute(req)
	var re *routers.RouteError
	switch {
	case err == nil:
	case !errors.As(err, &re):
		return fmt.Errorf("%s %s: routing: %w", x.Request.Method, path, err)
	case x.Status == http.StatusNotFound:
		// A route of the server beside the handler, such as nmauthd's
		// GET /api/whoami, is not found by the handler for other methods.
		return c.checkComponent(x, "NotFound", http.StatusNotFound)
	default:
		return c.checkComponent(x, "MethodNotAllowed", http.StatusMethodNotAllowed)
	}
	in := &openapi3filter.RequestValidationInput{
		Request:    req,
		PathParams: params,
		Route:      route,
		Options: &openapi3filter.Options{
			AuthenticationFunc: bearerPresent,
		},
	}
	reqErr := openapi3filter.ValidateRequest(ctx, in)
	if reqErr != nil && (x.Status < 400 || x.Status > 499) {
		return fmt.Errorf("%s %s: the document refuses the request (%v), yet the server answered %d",
			x.Request.Method, path, reqErr, x.Status)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 x.Status,
		Header:                 x.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	out.SetBodyBytes(x.Body)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return fmt.Errorf("%s %s: answer %d: %w", x.Request.Method, path, x.Status, err)
	}
	return nil
}

func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// checkComponent checks an answer that no operation describes against the
// named response of the document's components.
func (c *Checker) checkComponent(x Exchange, name string, status int) error {
	where := fmt.Sprintf("%s %s (%s)", x.Request.Method, x.Request.URL.Path, name)
	if x.Status != status {
		return fmt.Errorf("%s: status %d, want %d; body %s", where, x.Status, status, x.Body)
	}
	resp := c.doc.Components.Responses[name].Value
	for hname, h := range resp.Headers {
		if h.Value.Required && len(x.Header.Values(hname)) == 0 {
			return fmt.Errorf("%s: no %s header", where, hname)
		}
	}
	ct := x.Header.Get("Content-Type")
	mt := resp.Content.Get(ct)
	if mt == nil || mt.Schema == nil {
		return fmt.Errorf("%s: content type %q is not documented", where, ct)
	}
	v, err := decodeJSON(x.Body)
	if err != nil {
		return fmt.Errorf("%s: body %s: %w", where, x.Body, err)
	}
	if err := mt.Schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.VisitAsResponse()); err != nil {
		return fmt.Errorf("%s: body %s: %w", where, x.Body, err)
	}
	return nil
}

// bearerPresent accepts a request that carries one Authorization header
// with the bearer scheme and a credential; whether the credential is good
// is the server's to say, and the document allows its 401.
func bearerPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if in.SecurityScheme.Type != "http" || !strings.EqualFold(in.SecurityScheme.Scheme, "bearer") {
		return fmt.Errorf("security scheme %s: only http bearer is checked", in.SecuritySchemeName)
	}
	v := in.RequestValidationInput.Request.Header.Values("Authorization")
	if len(v) != 1 {
		return fmt.Errorf("%d Authorization headers, want 1", len(v))
	}
	scheme, cred, ok := strings.Cut(v[0], " ")
	if !ok || !strings.EqualFold(scheme, "bearer") || strings.TrimSpace(cred) == "" {
		return errors.New("no bearer credential")
	}
	return nil
}

func decodeJSON(b []byte) (any, error) {
	var v any
	err := json.Unmarshal(b, &v)
	return v, err
}
