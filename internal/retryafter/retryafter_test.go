package retryafter

import (
	"net/http"
	"testing"
	"time"
)

// TestSet checks the rounding: up to whole seconds, at least one.
func TestSet(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "1"}, {-time.Second, "1"}, {time.Nanosecond, "1"}, {time.Second, "1"},
		{1500 * time.Millisecond, "2"}, {time.Second + time.Nanosecond, "2"}, {15 * time.Minute, "900"},
	} {
		h := http.Header{"Retry-After": {"7"}}
		Set(h, tc.d)
		if got := h["Retry-After"]; len(got) != 1 || got[0] != tc.want {
			t.Errorf("Set(%v): Retry-After %q, want %q", tc.d, got, tc.want)
		}
	}
}
