package main

import (
	"net/http"

	"github.com/nmauth/nmauth"
)

// serveOpenAPI answers GET /openapi.yaml with the OpenAPI document of the
// wire profile nmauthd serves, for client authors and their tools.
func serveOpenAPI(wire nmauth.WireProfile) http.HandlerFunc {
	doc := nmauth.OpenAPI(wire)
	return func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/yaml")
		h.Set("X-Content-Type-Options", "nosniff")
		w.Write(doc)
	}
}
