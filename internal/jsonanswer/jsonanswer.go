// Package jsonanswer writes a JSON answer as nmauth's handler writes every
// one: the status, Content-Type application/json and Cache-Control
// no-store, then the body; and an error answer with the headers its
// status asks for, WWW-Authenticate or Retry-After. It knows nothing of
// the Authenticator or its wire profiles: its caller gives the value or
// the bytes to write, and the wait of an answer that has one.
package jsonanswer

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/nmauth/nmauth/internal/retryafter"
)

// Write writes status and v, encoded by encoding/json, with the headers
// of a JSON answer.
func Write(w http.ResponseWriter, status int, v any) {
	setHeader(w, status)
	json.NewEncoder(w).Encode(v)
}

// WriteBytes writes b, encoded JSON, as [Write] writes a value.
func WriteBytes(w http.ResponseWriter, status int, b []byte) {
	setHeader(w, status)
	w.Write(b)
}

// Error writes status and v as [Write] does, with the headers of an
// error answer: a 401 names the bearer scheme of realm "nmauth" in
// WWW-Authenticate, and a 429 or a 503 tells the client to come back
// after wait in Retry-After (see [retryafter.Set]).
func Error(w http.ResponseWriter, status int, wait time.Duration, v any) {
	h := w.Header()
	switch status {
	case http.StatusUnauthorized:
		h.Set("WWW-Authenticate", `Bearer realm="nmauth"`)
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		retryafter.Set(h, wait)
	}
	Write(w, status, v)
}

// setHeader writes status with the headers of a JSON answer. Their keys
// are canonical, so they are set in the map directly, both values from
// one allocation (each slice at its full capacity, so that adding a value
// to one copies it).
func setHeader(w http.ResponseWriter, status int) {
	v := []string{"application/json", "no-store"}
	h := w.Header()
	h["Content-Type"], h["Cache-Control"] = v[:1:1], v[1:2:2]
	w.WriteHeader(status)
}
