package nmauth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nmauth/nmauth"
)

// The exchanges of these tests are checked against the OpenAPI documents,
// but not in this module, which keeps the checker's OpenAPI validator
// (kin-openapi) out of the library's go.mod. When NMAUTH_TEST_EXCHANGES
// names a directory, every exchange the fixtures send is written there,
// one JSON object a line; TestLibraryExchanges, in the openapitest module,
// runs these tests so and checks each exchange against the document of
// its wire profile.

// exchangeLog records the exchanges of a fixture whose server the OpenAPI
// document of wire describes. A nil *exchangeLog records nothing.
type exchangeLog struct {
	wire nmauth.WireProfile
}

// exchangeLogFor returns the log of a fixture answering in profile w, or
// nil when NMAUTH_TEST_EXCHANGES is not set.
func exchangeLogFor(w nmauth.WireProfile) *exchangeLog {
	if os.Getenv("NMAUTH_TEST_EXCHANGES") == "" {
		return nil
	}
	return &exchangeLog{wire: w}
}

// recordedExchange is one line of the log. TestLibraryExchanges reads the
// same fields.
type recordedExchange struct {
	Test           string      `json:"test"`
	Wire           string      `json:"wire"`
	Method         string      `json:"method"`
	URL            string      `json:"url"`
	Header         http.Header `json:"header"`
	Body           []byte      `json:"body"`
	Status         int         `json:"status"`
	ResponseHeader http.Header `json:"responseHeader"`
	ResponseBody   []byte      `json:"responseBody"`
}

// exchangeFile is the file of this process's exchanges, made on first
// use; exchangeMu keeps its lines whole.
var (
	exchangeFile = sync.OnceValues(func() (*os.File, error) {
		return os.CreateTemp(os.Getenv("NMAUTH_TEST_EXCHANGES"), "exchanges-*.jsonl")
	})
	exchangeMu sync.Mutex
)

// record writes the exchange of req, whose body was sent, and its answer
// r, made by test t.
func (l *exchangeLog) record(t testing.TB, req *http.Request, sent []byte, r reply) {
	t.Helper()
	if l == nil {
		return
	}
	line, err := json.Marshal(recordedExchange{
		Test: t.Name(), Wire: l.wire.String(),
		Method: req.Method, URL: req.URL.String(), Header: req.Header, Body: sent,
		Status: r.status, ResponseHeader: r.header, ResponseBody: r.body,
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := exchangeFile()
	if err != nil {
		t.Fatal(err)
	}
	exchangeMu.Lock()
	defer exchangeMu.Unlock()
	if _, err := f.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
}

// maxRecordedBody is how much of a request body is kept for the check:
// more than the handler reads, so that a body it refuses as too large is
// kept whole or cut short, never cut to something valid.
const maxRecordedBody = (64 << 10) + 1

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
				wantError(t, post("net-1", "application/json", `{"id":"`+strings.Repeat("x", (64<<10))+`"}`), http.StatusRequestEntityTooLarge)
				wantError(t, post("broken", "application/json", good), http.StatusServiceUnavailable)
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

// TestOpenAPIDescribesTheHandler: the library's document of each profile
// describes the routes the handler serves (and the passkey package's,
// which an application mounts beside it), and none of nmauthd's own,
// whose document nmauthd keeps.
func TestOpenAPIDescribesTheHandler(t *testing.T) {
	for _, wire := range []nmauth.WireProfile{nmauth.WireSpec, nmauth.WireNetmaker} {
		var paths []string
		for _, line := range strings.Split(string(nmauth.OpenAPI(wire)), "\n") {
			if p, ok := strings.CutPrefix(line, "  /"); ok && strings.HasSuffix(p, ":") {
				paths = append(paths, "/"+strings.TrimSuffix(p, ":"))
			}
		}
		want := []string{"/api/hosts/adm/authenticate", "/api/users/adm/authenticate",
			"/api/users/{username}/auth/init-totp", "/api/users/{username}/auth/complete-totp",
			"/api/users/{username}/auth/verify-totp", "/api/nodes/{network}/authenticate"}
		if wire == nmauth.WireNetmaker {
			want = append(want, "/api/nodes/adm/{network}/authenticate")
		}
		want = append(want, "/api/v1/users/access_token", "/api/v1/users/logout")
		if wire == nmauth.WireNetmaker {
			want = append(want, "/api/v1/host/register/{token}", "/api/v1/enrollment-keys",
				"/api/v1/enrollment-keys/{id}", "/api/v1/enrollment-keys/{id}/revoke")
		} else {
			want = append(want, "/api/hosts/join", "/api/enrollment-keys",
				"/api/enrollment-keys/{id}", "/api/enrollment-keys/{id}/revoke")
		}
		var handler []string
		for _, p := range paths {
			if !strings.Contains(p, "/passkey") {
				handler = append(handler, p)
			}
		}
		if !slices.Equal(handler, want) {
			t.Errorf("%s: the document's paths besides the passkey package's are\n%v\nwant the handler's\n%v", wire, handler, want)
		}
	}
}
