package main

import (
	"net/http"

	"github.com/nmauth/nmauth"
)

// openAPIDocument is the document of the routes nmauthd serves.
var openAPIDocument = nmauth.OpenAPI()

// serveOpenAPI answers GET /openapi.yaml with the OpenAPI document, for
// client authors and their tools.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/yaml")
	h.Set("X-Content-Type-Options", "nosniff")
	w.Write(openAPIDocument)
}
