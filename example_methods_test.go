package nmauth_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/nmauth/nmauth"
)

// An application's own route keeps its 405 under the "/api/" mount. A
// ServeMux answers 405 only when no pattern matches the path, and "/api/"
// matches every path under it; so the application gives each path of its
// own a pattern without a method, which answers the other methods.
func Example_ownMethods() {
	auth, err := nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{rootSecret}})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", auth.Handler())
	mux.Handle("GET /api/networks", auth.Middleware(networkList{}))
	send := func(method string) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(method, "/api/networks", nil))
		fmt.Println(method, rec.Code, rec.Header().Get("Allow"), strings.TrimSpace(rec.Body.String()))
	}
	send(http.MethodPost) // falls to "/api/": nmauth's 404

	mux.HandleFunc("/api/networks", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "GET, HEAD")
		auth.WriteResponse(w, r, http.StatusMethodNotAllowed, "method not allowed", nil)
	})
	send(http.MethodPost)
	send(http.MethodDelete)
	// Output:
	// POST 404  {"code":404,"message":"not found"}
	// POST 405 GET, HEAD {"code":405,"message":"method not allowed"}
	// DELETE 405 GET, HEAD {"code":405,"message":"method not allowed"}
}

// networkList is one of the application's own routes.
type networkList struct{}

func (networkList) ServeHTTP(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }
