package jsonanswer

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
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

// TestError checks the headers each error status gets, and that an answer
// that tells no client to wait or to authenticate gets neither.
func TestError(t *testing.T) {
	for _, tc := range []struct {
		status             int
		wait               time.Duration
		wwwAuth, retryWait string
	}{
		{http.StatusUnauthorized, time.Minute, `Bearer realm="nmauth"`, ""},
		{http.StatusTooManyRequests, 1500 * time.Millisecond, "", "2"},
		{http.StatusServiceUnavailable, 0, "", "1"},
		{http.StatusForbidden, time.Minute, "", ""},
		{http.StatusInternalServerError, time.Minute, "", ""},
	} {
		rec := httptest.NewRecorder()
		Error(rec, tc.status, tc.wait, map[string]int{"code": tc.status})
		h := rec.Header()
		if rec.Code != tc.status || h.Get("WWW-Authenticate") != tc.wwwAuth || h.Get("Retry-After") != tc.retryWait {
			t.Errorf("status %d: got %d, WWW-Authenticate %q, Retry-After %q; want %q, %q",
				tc.status, rec.Code, h.Get("WWW-Authenticate"), h.Get("Retry-After"), tc.wwwAuth, tc.retryWait)
		}
		if h.Get("Content-Type") != "application/json" || rec.Body.String() != fmt.Sprintf("{\"code\":%d}\n", tc.status) {
			t.Errorf("status %d: Content-Type %q, body %q", tc.status, h.Get("Content-Type"), rec.Body)
		}
	}
}
