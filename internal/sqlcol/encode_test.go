package sqlcol

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestEncoder: an Encoder keeps the first error of a record's columns,
// and a time it refuses reads as 0 so that the caller can index it
// before it checks.
func TestEncoder(t *testing.T) {
	var e Encoder
	at := time.Unix(0, 5)
	if ns := e.Times(time.Time{}, at); e.Err != nil || !slices.Equal(ns, []int64{0, 5}) {
		t.Fatalf("times %v, %v", ns, e.Err)
	}
	if s := EncodeNullableListTo[string](&e, nil, "codes"); s != "null" {
		t.Errorf("nil nullable list %q", s)
	}
	if s := EncodeListTo[string](&e, nil, "list"); s != "[]" || e.Err != nil {
		t.Errorf("nil list %q, %v", s, e.Err)
	}
	if ns := e.Times(time.Unix(0, 0)); !errors.Is(e.Err, ErrTimeRange) || !slices.Equal(ns, []int64{0}) {
		t.Errorf("the epoch: %v, %v", ns, e.Err)
	}
	first := e.Err
	EncodeListTo(&e, []float64{math.NaN()}, "list")
	if e.Err != first {
		t.Errorf("error %v; want the first, %v", e.Err, first)
	}
	var n Encoder
	EncodeNullableListTo(&n, []float64{math.Inf(1)}, "codes")
	if n.Err == nil || !strings.HasPrefix(n.Err.Error(), "nmauth: sql store: encode codes: ") {
		t.Errorf("list that does not encode: %v", n.Err)
	}
}

// TestRowError: the error of a row with several broken columns reads as
// its first column's, names them all, and unwraps to each.
func TestRowError(t *testing.T) {
	a, b := errors.New("a is broken"), errors.New("b is broken")
	err := error(&RowError{Columns: []string{"a", "b"}, Errs: []error{a, b}})
	if err.Error() != "a is broken (broken columns: a, b)" || !errors.Is(err, a) || !errors.Is(err, b) {
		t.Errorf("error %q", err)
	}
}
