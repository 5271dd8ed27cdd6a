package nmauth

import (
	_ "embed"
)

// openAPISpec is kept beside the code it describes so that a change of an
// answer and of its document is one commit; the tests check every exchange
// of the HTTP suites against it.
//
//go:embed openapi/spec.yaml
var openAPISpec []byte

// OpenAPI returns the OpenAPI 3.1 document, in YAML, of the routes that
// [Authenticator.Handler] serves in the spec's wire profile, with every
// status they answer, together with the routes of the nmauthd server
// (GET /api/whoami, GET /healthz and GET /openapi.yaml). An application
// that serves the handler can serve this document to its clients. Each
// call returns a fresh copy.
func OpenAPI() []byte { return append([]byte(nil), openAPISpec...) }
