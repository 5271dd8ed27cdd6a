package jsonanswer

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// TestWrite checks the status, the headers and the body of both writers.
func TestWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(w http.ResponseWriter)
		code  int
		body  string
	}{
		{"value", func(w http.ResponseWriter) { Write(w, http.StatusTeapot, map[string]string{"a": "<b>"}) },
			http.StatusTeapot, "{\"a\":\"\\u003cb\\u003e\"}\n"},
		{"bytes", func(w http.ResponseWriter) { WriteBytes(w, http.StatusOK, []byte(`{"a":1}`)) },
			http.StatusOK, `{"a":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			tc.write(rec)
			if rec.Code != tc.code || rec.Body.String() != tc.body {
				t.Errorf("status %d, body %q; want %d, %q", rec.Code, rec.Body, tc.code, tc.body)
			}
			h := rec.Header()
			if !slices.Equal(h["Content-Type"], []string{"application/json"}) || !slices.Equal(h["Cache-Control"], []string{"no-store"}) {
				t.Errorf("headers %v", h)
			}
		})
	}
}

// TestHeaderValuesApart: adding a value to one header leaves the other as
// it was, though both came from one allocation.
func TestHeaderValuesApart(t *testing.T) {
	rec := httptest.NewRecorder()
	Write(rec, http.StatusOK, nil)
	h := rec.Header()
	h.Add("Content-Type", "x")
	if !slices.Equal(h["Cache-Control"], []string{"no-store"}) {
		t.Errorf("Cache-Control %v after adding a Content-Type", h["Cache-Control"])
	}
}
