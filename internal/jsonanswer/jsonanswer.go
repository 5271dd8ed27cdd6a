// Package jsonanswer writes a JSON answer as nmauth's handler writes every
// one: the status, Content-Type application/json and Cache-Control
// no-store, then the body. It knows nothing of the Authenticator or its
// wire profiles: its caller gives the value or the bytes to write.
package jsonanswer

import (
	"encoding/json"
	"net/http"
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
