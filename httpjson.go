// This file owns JSON in and out at the root: the size of a request body
// and the quick parse of a host login body, both read and decoded by
// internal/jsonbody, and the answers internal/jsonanswer writes.

package nmauth

import (
	"net/http"

	"github.com/nmauth/nmauth/internal/jsonanswer"
	"github.com/nmauth/nmauth/internal/jsonbody"
)

// maxBodyBytes is the largest request body the handler reads.
const maxBodyBytes = 64 << 10

// decodeJSON reads exactly one JSON value of at most maxBodyBytes from an
// application/json body into v, a pointer to a struct, whose keys must
// match v's field names exactly (see [jsonbody.CheckKeys]).
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := readJSONBody(w, r)
	if err != nil {
		return err
	}
	return jsonbody.Decode(body, v)
}

// readJSONBody reads an application/json body of at most maxBodyBytes.
func readJSONBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return jsonbody.Read(w, r, maxBodyBytes)
}

// hostLoginKeys are the JSON names of hostAuthRequest's fields, in order.
var hostLoginKeys = []string{"id", "macaddress", "password"}

// parseFlat fills req from body when body is one JSON object of string
// values, each key one of req's fields at most once, each string without
// an escape or a control character and in valid UTF-8, with nothing but
// JSON whitespace around its tokens: the body every netclient sends (see
// [jsonbody.Flat]). Such a body [jsonbody.Decode] takes too, with the same
// fields, so parseFlat only saves its work. For any other body it reports
// false and leaves req as it was, for jsonbody.Decode to judge.
func (req *hostAuthRequest) parseFlat(body []byte) bool {
	var v [3]string
	if !jsonbody.Flat(body, hostLoginKeys, v[:]) {
		return false
	}
	*req = hostAuthRequest{ID: v[0], MACAddress: v[1], Password: v[2]}
	return true
}

// writeJSON writes status and v as a JSON answer (see [jsonanswer.Write]).
func writeJSON(w http.ResponseWriter, status int, v any) { jsonanswer.Write(w, status, v) }

// writeJSONBytes writes b, encoded JSON, as writeJSON writes a value.
func writeJSONBytes(w http.ResponseWriter, status int, b []byte) { jsonanswer.WriteBytes(w, status, b) }
