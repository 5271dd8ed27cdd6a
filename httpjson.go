// This file owns JSON in at the root: the size of a request body, read
// and decoded by internal/jsonbody.

package nmauth

import (
	"net/http"

	"github.com/nmauth/nmauth/internal/jsonbody"
)

// maxBodyBytes is the largest request body the handler reads.
const maxBodyBytes = 64 << 10

// decodeJSON reads exactly one JSON value of at most maxBodyBytes from an
// application/json body into v, a pointer to a struct, whose keys must
// match v's field names exactly (see [jsonbody.CheckKeys]).
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := jsonbody.Read(w, r, maxBodyBytes)
	if err != nil {
		return err
	}
	return jsonbody.Decode(body, v)
}
