//go:build !go1.26

package nmauth_test

import "net/http"

// muxRedirect is the status net/http's ServeMux answers when it redirects a
// path to its cleaned form: 301 before Go 1.26 (307 from Go 1.26 on).
const muxRedirect = http.StatusMovedPermanently
