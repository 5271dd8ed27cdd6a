package nmauth_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

// TestRetryError checks the one error that says "come back later": its
// reason is what errors.Is matches and decides the status, 429 for a
// throttle and 503 for an overload, each with Retry-After in whole
// seconds, also when the error is wrapped.
func TestRetryError(t *testing.T) {
	auth, err := nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{make([]byte, 32)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		err        *nmauth.RetryError
		is, isNot  error
		text       string
		status     int
		retryAfter string
	}{
		{&nmauth.RetryError{Reason: nmauth.ErrThrottled, RetryAfter: 90 * time.Second}, nmauth.ErrThrottled, nmauth.ErrOverloaded,
			"nmauth: too many attempts, retry after 1m30s", http.StatusTooManyRequests, "90"},
		{&nmauth.RetryError{Reason: nmauth.ErrOverloaded, RetryAfter: 1200 * time.Millisecond}, nmauth.ErrOverloaded, nmauth.ErrThrottled,
			"nmauth: overloaded, retry after 1s", http.StatusServiceUnavailable, "2"},
	} {
		wrapped := fmt.Errorf("login: %w", tc.err)
		var got *nmauth.RetryError
		if !errors.Is(wrapped, tc.is) || errors.Is(wrapped, tc.isNot) || !errors.As(wrapped, &got) || got != tc.err {
			t.Errorf("%v: errors.Is/As do not find the reason %v alone", tc.err, tc.is)
		}
		if tc.err.Error() != tc.text {
			t.Errorf("Error() = %q, want %q", tc.err.Error(), tc.text)
		}
		rec := httptest.NewRecorder()
		auth.WriteError(rec, httptest.NewRequest(http.MethodPost, "/app", nil), wrapped)
		if rec.Code != tc.status || rec.Header().Get("Retry-After") != tc.retryAfter {
			t.Errorf("%v: %d with Retry-After %q, want %d with %q", tc.err, rec.Code, rec.Header().Get("Retry-After"), tc.status, tc.retryAfter)
		}
	}
}
