package nmauth

import (
	_ "embed"
)

// The documents are kept beside the code they describe so that a change of
// an answer and of its document is one commit; the tests check every
// exchange of the HTTP suites against the document of its profile.
var (
	//go:embed openapi/spec.yaml
	openAPISpec []byte
	//go:embed openapi/netmaker.yaml
	openAPINetmaker []byte
)

// OpenAPI returns the OpenAPI 3.1 document, in YAML, of the routes that
// [Authenticator.Handler] serves in wire profile w, with every status they
// answer, and of the routes of the passkey package, which an application
// mounts beside it. An application that serves the handler can serve this
// document to its clients, adding its own routes as nmauthd adds its own.
// Each call returns a fresh copy.
func OpenAPI(w WireProfile) []byte {
	doc := openAPISpec
	if w == WireNetmaker {
		doc = openAPINetmaker
	}
	return append([]byte(nil), doc...)
}
