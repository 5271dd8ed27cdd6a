// This file owns the error mapping: the one function that gives an error
// its HTTP status and the text a client sees, and [Authenticator.WriteError],
// which writes it.

package nmauth

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/nmauth/nmauth/internal/jsonanswer"
	"github.com/nmauth/nmauth/internal/jsonbody"
)

// errorStatus maps an error to its HTTP status and the only text a client
// sees. Anything it does not know is a 500 with a generic message.
func errorStatus(err error) (int, string) {
	var field *jsonbody.FieldError
	var badRequest requestError
	switch {
	case errors.Is(err, jsonbody.ErrContentType):
		return http.StatusUnsupportedMediaType, "content type must be application/json"
	case errors.Is(err, jsonbody.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, "request body too large"
	case errors.Is(err, jsonbody.ErrMalformed):
		return http.StatusBadRequest, "malformed JSON body"
	case errors.Is(err, jsonbody.ErrDuplicateKey):
		return http.StatusBadRequest, "a field is given twice in the JSON body"
	case errors.As(err, &field):
		return http.StatusBadRequest, field.Message()
	case errors.Is(err, errMethod):
		return http.StatusMethodNotAllowed, "method not allowed"
	case errors.Is(err, errNoRoute):
		return http.StatusNotFound, "not found"
	case errors.Is(err, ErrInvalidCredentials):
		return http.StatusUnauthorized, "invalid credentials"
	case errors.Is(err, ErrUnauthenticated):
		return http.StatusUnauthorized, "missing or invalid bearer credential"
	case errors.Is(err, ErrInvalidCode):
		return http.StatusUnauthorized, "invalid TOTP code"
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden, "forbidden"
	case errors.Is(err, ErrMalformedCode):
		return http.StatusBadRequest, "totp must be a 6-digit code or a recovery code"
	case errors.Is(err, errWrongEnrollmentCode):
		return http.StatusBadRequest, "wrong TOTP code"
	case errors.Is(err, ErrInvalidEnrollment):
		return http.StatusBadRequest, "invalid or expired enrollment"
	case errors.Is(err, ErrInvalidUsername):
		return http.StatusBadRequest, "invalid username"
	case errors.Is(err, ErrInvalidPassword):
		return http.StatusBadRequest, "invalid password"
	case errors.Is(err, ErrInvalidHost):
		return http.StatusBadRequest, "invalid host id or MAC address"
	case errors.Is(err, ErrInvalidNetwork):
		return http.StatusBadRequest, "invalid network"
	case errors.Is(err, errNoAccessToken):
		return http.StatusNotFound, "access token not found"
	case errors.Is(err, errNoEnrollmentKey):
		return http.StatusNotFound, "enrollment key not found"
	case errors.Is(err, ErrInvalidEnrollmentKey):
		return http.StatusBadRequest, "invalid enrollment key"
	case errors.Is(err, ErrEnrollmentKeysOff):
		return http.StatusNotImplemented, "enrollment keys are not kept by this server's store"
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound, "user not found"
	case errors.As(err, &badRequest):
		return http.StatusBadRequest, string(badRequest)
	case errors.Is(err, ErrTooManyAccessTokens):
		return http.StatusConflict, "too many access tokens for this user"
	case errors.Is(err, ErrAccessTokensOff):
		return http.StatusNotImplemented, "access tokens are not kept by this server's store"
	case errors.Is(err, ErrThrottled):
		return http.StatusTooManyRequests, "too many attempts, try again later"
	case errors.Is(err, ErrOverloaded):
		return http.StatusServiceUnavailable, "server busy, try again later"
	case errors.Is(err, ErrStoreUnavailable):
		return http.StatusServiceUnavailable, "service unavailable, try again later"
	case errors.Is(err, ErrDataFault):
		return http.StatusInternalServerError, "internal error"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "request cancelled"
	}
	return http.StatusInternalServerError, "internal error"
}

// WriteError answers r with err in the active wire profile's envelope,
// with the status the handler's own routes give that error: among others
// 401 with WWW-Authenticate for [ErrUnauthenticated] and
// [ErrInvalidCredentials], 403 for [ErrForbidden], 404 for [ErrNotFound],
// 429 or 503 with Retry-After for [ErrThrottled], [ErrOverloaded] and
// [ErrStoreUnavailable], and 500 with a generic message for an error it
// does not know. The client sees only that message, never err's text; the
// detail of a 5xx goes to the log.
func (a *Authenticator) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	status, body := a.wireError(err)
	// A Store fault is logged where it happens, at a bounded rate.
	if status >= 500 && !errors.Is(err, ErrStoreUnavailable) {
		// A full hashing queue is load shed by design, not a fault.
		level := slog.LevelError
		if status == http.StatusServiceUnavailable {
			level = slog.LevelWarn
		}
		a.log.LogAttrs(r.Context(), level, "request failed",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("err", err.Error()))
	}
	var wait time.Duration
	if re := (*RetryError)(nil); errors.As(err, &re) {
		wait = re.RetryAfter
	}
	jsonanswer.Error(w, status, wait, body)
}
