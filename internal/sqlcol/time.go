package sqlcol

import (
	"errors"
	"fmt"
	"time"
)

// ErrTimeRange is the error of a time that Nanos refuses.
var ErrTimeRange = errors.New("nmauth: sql store: time out of range")

// Nanos is t as the store keeps it, in Unix nanoseconds, 0 for the zero
// time. A time that would not read back equal is refused (false) rather
// than stored wrong: one outside the int64 range, and the epoch, which
// reads back as the zero time.
func Nanos(t time.Time) (int64, bool) {
	if t.IsZero() {
		return 0, true
	}
	n := t.UnixNano()
	if n == 0 || !time.Unix(0, n).Equal(t) {
		return 0, false
	}
	return n, true
}

// Time reads back a time that Nanos wrote, in UTC.
func Time(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// EncodeTimes converts each time with Nanos, or fails with ErrTimeRange
// for the first that Nanos refuses.
func EncodeTimes(ts ...time.Time) ([]int64, error) {
	out := make([]int64, len(ts))
	for i, t := range ts {
		n, ok := Nanos(t)
		if !ok {
			return nil, fmt.Errorf("%w: %s", ErrTimeRange, t.UTC().Format(time.RFC3339Nano))
		}
		out[i] = n
	}
	return out, nil
}
