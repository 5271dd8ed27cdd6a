package nmauth_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/openapitest"
)

func openAPIChecker(t testing.TB, w nmauth.WireProfile) *openapitest.Checker {
	t.Helper()
	c, err := openapitest.ForProfile(w)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkOpenAPI fails the test when an exchange departs from the document.
// A nil checker checks nothing: for a server that also serves routes of
// its own, which the document does not describe.
func checkOpenAPI(t testing.TB, c *openapitest.Checker, req *http.Request, sent []byte, r reply) {
	t.Helper()
	if c == nil {
		return
	}
	err := c.Check(openapitest.Exchange{Request: req, RequestBody: sent, Status: r.status, Header: r.header, Body: r.body})
	if err != nil {
		t.Errorf("the exchange departs from the OpenAPI document: %v", err)
	}
}

// maxRecordedBody is how much of a request body is kept for the check:
// more than the handler reads, so that a body it refuses as too large is
// kept whole or cut short, never cut to something valid.
const maxRecordedBody = nmauth.MaxBodyBytes + 1

// recordBody replaces the body of req with a copy that keeps the first
// limit bytes read from it, for checking after the request is sent.
func recordBody(req *http.Request, limit int64) *bytes.Buffer {
	var sent bytes.Buffer
	if req.Body != nil {
		req.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(req.Body, &capped{w: &sent, n: limit}), req.Body}
	}
	return &sent
}

// capped writes at most n bytes to w and drops the rest; a body cut short
// is no longer valid JSON, which the document refuses as the server does.
type capped struct {
	w io.Writer
	n int64
}

func (c *capped) Write(p []byte) (int, error) {
	if c.n > 0 {
		k := min(int64(len(p)), c.n)
		c.w.Write(p[:k])
		c.n -= k
	}
	return len(p), nil
}

func TestOpenAPIDocumentsLoad(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) { openAPIChecker(t, w) })
}

// TestOpenAPICheckerRefusesWrongAnswers feeds the checker answers that
// are each wrong in one way, after a right one it must accept, so that a
// passing HTTP suite means the document was really consulted.
func TestOpenAPICheckerRefusesWrongAnswers(t *testing.T) {
	c := openAPIChecker(t, nmauth.WireSpec)
	f := newFixture(t)
	f.addUser("alice", "correct horse battery")
	login := func() (*http.Request, []byte) {
		body := []byte(`{"username":"alice","password":"correct horse battery"}`)
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/api/users/adm/authenticate", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		return req, body
	}
	req, sent := login()
	right := f.send(req)
	wantStatus(t, right, http.StatusOK)
	noAuth := func() http.Header {
		h := right.header.Clone()
		h.Del("WWW-Authenticate")
		return h
	}
	tests := []struct {
		name   string
		status int
		header http.Header
		body   string
	}{
		{"renamed field", 200, right.header, strings.Replace(string(right.body), `"authToken"`, `"AuthToken"`, 1)},
		{"extra field", 200, right.header, strings.Replace(string(right.body), `"userName"`, `"isAdmin":true,"userName"`, 1)},
		{"token not a JWT", 200, right.header, `{"code":200,"message":"ok","response":{"authToken":"x","userName":"alice"}}`},
		{"code differs from status", 400, right.header, `{"code":401,"message":"malformed JSON body"}`},
		{"401 without WWW-Authenticate", 401, noAuth(), `{"code":401,"message":"invalid credentials"}`},
		{"429 without Retry-After", 429, right.header, `{"code":429,"message":"too many attempts"}`},
		{"undocumented status", 418, right.header, `{"code":418,"message":"teapot"}`},
		{"no Cache-Control", 200, http.Header{"Content-Type": {"application/json"}}, string(right.body)},
	}
	if err := c.Check(openapitest.Exchange{Request: req, RequestBody: sent, Status: right.status, Header: right.header, Body: right.body}); err != nil {
		t.Fatalf("the right answer is refused: %v", err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, sent := login()
			x := openapitest.Exchange{Request: req, RequestBody: sent, Status: tc.status, Header: tc.header, Body: []byte(tc.body)}
			err := c.Check(x)
			if err == nil {
				t.Fatalf("the checker accepts %d %s", tc.status, tc.body)
			}
			t.Logf("refused: %v", err)
		})
	}
	// A request the document refuses must not be answered 200.
	req, _ = login()
	req.Header.Set("Content-Type", "text/plain")
	x := openapitest.Exchange{Request: req, RequestBody: sent, Status: right.status, Header: right.header, Body: right.body}
	if err := c.Check(x); err == nil {
		t.Error("the checker accepts 200 for a text/plain body")
	}
}

// TestOpenAPINodeRoutes sends node login, on every node route of each
// profile, the requests each refusal of the handler answers, so that the
// document is checked for each status and not only for the ones a walk
// through the happy path meets.
func TestOpenAPINodeRoutes(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w), func(c *nmauth.Config) {
			c.NodeMember = func(_ context.Context, network, hostID string) (bool, error) {
				if network == "broken" {
					return false, errors.New("membership table unreadable")
				}
				return network == "net-1" && hostID == testHostIDs[0], nil
			}
		})
		f.addHost(testHostIDs[0], "aa:bb:cc:dd:ee:01", "host-password-1")
		paths := []string{"/api/nodes/%s/authenticate"}
		if w == nmauth.WireNetmaker {
			paths = append(paths, "/api/nodes/adm/%s/authenticate")
		}
		good := `{"id":"` + testHostIDs[0] + `","password":"host-password-1"}`
		for _, path := range paths {
			url := func(network string) string { return f.srv.URL + fmt.Sprintf(path, network) }
			post := func(network, contentType, body string) reply {
				req, err := http.NewRequest(http.MethodPost, url(network), strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", contentType)
				return f.send(req)
			}
			t.Run(path, func(t *testing.T) {
				wantStatus(t, post("net-1", "application/json", good), http.StatusOK)
				wantError(t, post("net-1", "application/json", `{"id":`), http.StatusBadRequest)
				wantError(t, post("a%20b", "application/json", good), http.StatusBadRequest)
				wantError(t, post("net-1", "application/json", `{"id":"`+testHostIDs[0]+`","password":"host-password-1","macaddress":"not a mac"}`), http.StatusBadRequest)
				wantError(t, post("net-1", "application/json", `{"id":"`+testHostIDs[0]+`","password":"wrong-password"}`), http.StatusUnauthorized)
				wantError(t, post("net-2", "application/json", good), http.StatusForbidden)
				wantError(t, post("net-1", "text/plain", good), http.StatusUnsupportedMediaType)
				wantError(t, post("net-1", "application/json", `{"id":"`+strings.Repeat("x", nmauth.MaxBodyBytes)+`"}`), http.StatusRequestEntityTooLarge)
				wantError(t, post("broken", "application/json", good), http.StatusInternalServerError)
				req, err := http.NewRequest(http.MethodGet, url("net-1"), nil)
				if err != nil {
					t.Fatal(err)
				}
				r := f.send(req)
				wantError(t, r, http.StatusMethodNotAllowed)
				if r.header.Get("Allow") != http.MethodPost {
					t.Errorf("405 with Allow %q, want POST", r.header.Get("Allow"))
				}
			})
		}
	})
}

// TestOpenAPICheckerRefusesWrongNodeAnswers feeds each profile's checker
// a node login answer with the other profile's keys, after the right one,
// so that the node routes are known to be checked against their schema.
func TestOpenAPICheckerRefusesWrongNodeAnswers(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		c := openAPIChecker(t, w)
		f := newFixture(t, withWire(w), memberOf)
		f.addHost(testHostIDs[0], "", "host-password-1")
		body := []byte(`{"id":"` + testHostIDs[0] + `","password":"host-password-1"}`)
		req := func() *http.Request {
			r, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/api/nodes/net-1/authenticate", bytes.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			return r
		}
		right := f.send(req())
		wantStatus(t, right, http.StatusOK)
		tok, _ := right.field(t, "authToken").(string)
		wrong := map[nmauth.WireProfile][]string{
			nmauth.WireSpec: {
				`{"code":200,"message":"node authenticated","response":{"authToken":"` + tok + `","id":"` + testHostIDs[0] + `"}}`,
				`{"Code":200,"Message":"node authenticated","Response":{"ID":"` + testHostIDs[0] + `","AuthToken":"` + tok + `"}}`,
			},
			nmauth.WireNetmaker: {
				`{"Code":200,"Message":"node authenticated","Response":{"ID":"` + testHostIDs[0] + `","AuthToken":"` + tok + `","network":"net-1"}}`,
				`{"Code":200,"Message":"node authenticated","Response":{"ID":"` + strings.ToUpper(testHostIDs[0]) + `","AuthToken":"` + tok + `"}}`,
				`{"code":200,"message":"node authenticated","response":{"authToken":"` + tok + `","id":"` + testHostIDs[0] + `","network":"net-1"}}`,
			},
		}
		for _, b := range wrong[w] {
			x := openapitest.Exchange{Request: req(), RequestBody: body, Status: right.status, Header: right.header, Body: []byte(b)}
			if err := c.Check(x); err == nil {
				t.Errorf("the checker accepts %s", b)
			}
		}
	})
}
