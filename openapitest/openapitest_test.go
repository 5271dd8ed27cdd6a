package openapitest_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/openapitest"
)

// hostID is a host id valid in both profiles: Netmaker's are UUIDs.
const hostID = "3f2b8c1e-7d4a-4e0b-9c6f-1a2b3c4d5e01"

func TestDocumentsLoad(t *testing.T) {
	for _, w := range []nmauth.WireProfile{nmauth.WireSpec, nmauth.WireNetmaker} {
		if _, err := openapitest.ForProfile(w); err != nil {
			t.Errorf("%s: %v", w, err)
		}
	}
}

// TestCheckerRefusesWrongAnswers feeds the checker answers that are each
// wrong in one way, after a right one it must accept, so that a passing
// HTTP suite means the document was really consulted.
func TestCheckerRefusesWrongAnswers(t *testing.T) {
	c := checker(t, nmauth.WireSpec)
	srv := newServer(t, nmauth.WireSpec)
	login := `{"username":"alice","password":"correct horse battery"}`
	right := post(t, srv.URL+"/api/users/adm/authenticate", "application/json", login)
	if right.Status != http.StatusOK {
		t.Fatalf("login answered %d %s", right.Status, right.Body)
	}
	if err := c.Check(right); err != nil {
		t.Fatalf("the right answer is refused: %v", err)
	}
	noAuth := right.Header.Clone()
	noAuth.Del("WWW-Authenticate")
	tests := []struct {
		name   string
		status int
		header http.Header
		body   string
	}{
		{"renamed field", 200, right.Header, strings.Replace(string(right.Body), `"authToken"`, `"AuthToken"`, 1)},
		{"extra field", 200, right.Header, strings.Replace(string(right.Body), `"userName"`, `"isAdmin":true,"userName"`, 1)},
		{"token not a JWT", 200, right.Header, `{"code":200,"message":"ok","response":{"authToken":"x","userName":"alice"}}`},
		{"code differs from status", 400, right.Header, `{"code":401,"message":"malformed JSON body"}`},
		{"401 without WWW-Authenticate", 401, noAuth, `{"code":401,"message":"invalid credentials"}`},
		{"429 without Retry-After", 429, right.Header, `{"code":429,"message":"too many attempts"}`},
		{"undocumented status", 418, right.Header, `{"code":418,"message":"teapot"}`},
		{"no Cache-Control", 200, http.Header{"Content-Type": {"application/json"}}, string(right.Body)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := right
			x.Status, x.Header, x.Body = tc.status, tc.header, []byte(tc.body)
			err := c.Check(x)
			if err == nil {
				t.Fatalf("the checker accepts %d %s", tc.status, tc.body)
			}
			t.Logf("refused: %v", err)
		})
	}
	// A request the document refuses must not be answered 200.
	x := right
	x.Request = x.Request.Clone(context.Background())
	x.Request.Header.Set("Content-Type", "text/plain")
	if err := c.Check(x); err == nil {
		t.Error("the checker accepts 200 for a text/plain body")
	}
}

// TestCheckerRefusesWrongNodeAnswers feeds each profile's checker a node
// login answer with the other profile's keys, after the right one, so that
// the node routes are known to be checked against their schema.
func TestCheckerRefusesWrongNodeAnswers(t *testing.T) {
	for _, w := range []nmauth.WireProfile{nmauth.WireSpec, nmauth.WireNetmaker} {
		t.Run(w.String(), func(t *testing.T) {
			c := checker(t, w)
			srv := newServer(t, w)
			right := post(t, srv.URL+"/api/nodes/net-1/authenticate", "application/json", `{"id":"`+hostID+`","password":"host-password-1"}`)
			if right.Status != http.StatusOK {
				t.Fatalf("node login answered %d %s", right.Status, right.Body)
			}
			if err := c.Check(right); err != nil {
				t.Fatalf("the right answer is refused: %v", err)
			}
			tok := nodeToken(t, right.Body)
			wrong := map[nmauth.WireProfile][]string{
				nmauth.WireSpec: {
					`{"code":200,"message":"node authenticated","response":{"authToken":"` + tok + `","id":"` + hostID + `"}}`,
					`{"Code":200,"Message":"node authenticated","Response":{"ID":"` + hostID + `","AuthToken":"` + tok + `"}}`,
				},
				nmauth.WireNetmaker: {
					`{"Code":200,"Message":"node authenticated","Response":{"ID":"` + hostID + `","AuthToken":"` + tok + `","network":"net-1"}}`,
					`{"Code":200,"Message":"node authenticated","Response":{"ID":"` + strings.ToUpper(hostID) + `","AuthToken":"` + tok + `"}}`,
					`{"code":200,"message":"node authenticated","response":{"authToken":"` + tok + `","id":"` + hostID + `","network":"net-1"}}`,
				},
			}
			for _, b := range wrong[w] {
				x := right
				x.Body = []byte(b)
				if err := c.Check(x); err == nil {
					t.Errorf("the checker accepts %s", b)
				}
			}
		})
	}
}

func checker(t *testing.T, w nmauth.WireProfile) *openapitest.Checker {
	t.Helper()
	c, err := openapitest.ForProfile(w)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newServer serves, in profile w, an Authenticator that knows the user
// alice and the host hostID, a member of the network net-1.
func newServer(t *testing.T, w nmauth.WireProfile) *httptest.Server {
	t.Helper()
	secret := make([]byte, 32)
	rand.Read(secret)
	a, err := nmauth.New(nmauth.Config{
		Store:   nmauth.NewMemoryStore(),
		Secrets: [][]byte{secret},
		Wire:    w,
		NodeMember: func(_ context.Context, network, host string) (bool, error) {
			return network == "net-1" && host == hostID, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := a.Admin().CreateUser(ctx, "alice", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	if err := a.Admin().CreateHost(ctx, hostID, "", "host-password-1"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	return srv
}

// post sends body to url with the content type ct, and returns the
// exchange as the client saw it.
func post(t *testing.T, url, ct, body string) openapitest.Exchange {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return openapitest.Exchange{Request: req, RequestBody: []byte(body), Status: resp.StatusCode, Header: resp.Header, Body: got}
}

// nodeToken returns the token of a node login answer in either profile:
// encoding/json matches keys whatever their case, so one struct reads
// "response"/"authToken" and "Response"/"AuthToken" alike.
func nodeToken(t *testing.T, body []byte) string {
	t.Helper()
	var answer struct{ Response struct{ AuthToken string } }
	if err := json.Unmarshal(body, &answer); err != nil || answer.Response.AuthToken == "" {
		t.Fatalf("no token in %s (%v)", body, err)
	}
	return answer.Response.AuthToken
}
