package routemux

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// answer is a handler that writes its name.
func answer(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, name+" "+r.PathValue("id")) }
}

// TestNew checks each kind of request: a route's, a known path with
// another method, and no route's path.
func TestNew(t *testing.T) {
	mux := New([]Route{
		Post("/api/keys", answer("create")),
		Get("/api/keys", answer("list")),
		Delete("/api/keys/{id}", answer("delete")),
	}, answer("405"), answer("404"))
	for _, tc := range []struct {
		method, path string
		body, allow  string
	}{
		{http.MethodPost, "/api/keys", "create ", ""},
		{http.MethodGet, "/api/keys", "list ", ""},
		{http.MethodDelete, "/api/keys/k1", "delete k1", ""},
		{http.MethodPut, "/api/keys", "405 ", "POST, GET"},
		{http.MethodPost, "/api/keys/k1", "405 k1", "DELETE"},
		{http.MethodGet, "/api/other", "404 ", ""},
		{http.MethodGet, "/", "404 ", ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Body.String() != tc.body || rec.Header().Get("Allow") != tc.allow {
				t.Errorf("body %q, Allow %q; want %q, %q", rec.Body, rec.Header().Get("Allow"), tc.body, tc.allow)
			}
		})
	}
}
