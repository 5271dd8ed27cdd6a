package openapitest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/openapitest"
)

// recordedExchange is one line that the library's tests write when
// NMAUTH_TEST_EXCHANGES names a directory (exchangeLog, in the library's
// openapi_test.go, writes the same fields).
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

// maxReported bounds the departures reported one by one.
const maxReported = 50

// TestLibraryExchanges runs the library's own tests, which send their
// requests to its handler over real HTTP, with NMAUTH_TEST_EXCHANGES set,
// and checks every exchange they made against the OpenAPI document of the
// profile the handler answered in: an answer that drifts from its
// document fails here, under the name of the test that got it. The
// library's module cannot check them itself: it does not require this
// module's OpenAPI validator.
func TestLibraryExchanges(t *testing.T) {
	dir := t.TempDir()
	// "go" is the toolchain running this test: go test puts its own bin
	// directory first in PATH.
	cmd := exec.Command("go", "test", "-count=1", "github.com/nmauth/nmauth")
	cmd.Env = append(os.Environ(), "NMAUTH_TEST_EXCHANGES="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the library's tests failed, so not all their exchanges were made: %v\n%s", err, out)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	checked := map[nmauth.WireProfile]int{}
	departed := 0
	for _, name := range files {
		err := eachExchange(name, func(x recordedExchange) error {
			w, err := nmauth.ParseWireProfile(x.Wire)
			if err != nil {
				return err
			}
			if err := checkRecorded(w, x); err != nil {
				if departed++; departed <= maxReported {
					t.Errorf("%s: the exchange departs from the %s OpenAPI document: %v", x.Test, w, err)
				}
			}
			checked[w]++
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if departed > maxReported {
		t.Errorf("and %d more departures", departed-maxReported)
	}
	for _, w := range []nmauth.WireProfile{nmauth.WireSpec, nmauth.WireNetmaker} {
		if checked[w] == 0 {
			t.Errorf("the library's tests recorded no exchange in the %s profile", w)
		}
	}
	t.Logf("checked %d exchanges in the spec profile and %d in the Netmaker profile", checked[nmauth.WireSpec], checked[nmauth.WireNetmaker])
}

// eachExchange calls fn with each exchange of the file name.
func eachExchange(name string, fn func(recordedExchange) error) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	for {
		var x recordedExchange
		err := dec.Decode(&x)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(x); err != nil {
			return err
		}
	}
}

// checkRecorded checks x against the document of profile w.
func checkRecorded(w nmauth.WireProfile, x recordedExchange) error {
	c, err := openapitest.ForProfile(w)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(x.Method, x.URL, nil)
	if err != nil {
		return fmt.Errorf("rebuilding the request: %w", err)
	}
	req.Header = x.Header
	return c.Check(openapitest.Exchange{Request: req, RequestBody: x.Body, Status: x.Status, Header: x.ResponseHeader, Body: x.ResponseBody})
}
