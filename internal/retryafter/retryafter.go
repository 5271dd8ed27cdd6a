// Package retryafter sets the Retry-After header of an answer that tells
// a client to come back later, 429 or 503, from the wait it is given: in
// delay-seconds (RFC 9110, section 10.2.3), never a date. It knows nothing
// of the errors that carry the wait: its caller finds it.
package retryafter

import (
	"net/http"
	"strconv"
	"time"
)

// Set sets h's Retry-After to d rounded up to whole seconds, at least
// one.
func Set(h http.Header, d time.Duration) {
	h.Set("Retry-After", strconv.Itoa(max(1, int((d+time.Second-1)/time.Second))))
}
