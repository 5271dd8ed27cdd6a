package walk

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
)

// lister lists the keys "000" to n-1, in order, and counts its calls.
type lister struct {
	n, calls int
	fail     int // the call that fails, from 1; 0 for none
}

func (l *lister) list(_ context.Context, after string, limit int) ([]string, error) {
	l.calls++
	if l.calls == l.fail {
		return nil, errors.New("store down")
	}
	var out []string
	for i := range l.n {
		if k := key(i); k > after && len(out) < limit {
			out = append(out, k)
		}
	}
	return out, nil
}

func key(i int) string { s := strconv.Itoa(i); return "000"[len(s):] + s }

func TestAllVisitsEveryRecordOnce(t *testing.T) {
	for _, n := range []int{0, 1, 4, 5, 12} {
		l := &lister{n: n}
		var seen []string
		err := All(context.Background(), 4, l.list, func(s string) string { return s }, func(s string) error {
			seen = append(seen, s)
			return nil
		})
		var want []string
		for i := range n {
			want = append(want, key(i))
		}
		if err != nil || !slices.Equal(seen, want) {
			t.Errorf("n=%d: saw %v, %v; want %v", n, seen, err, want)
		}
		if wantCalls := n/4 + 1; l.calls != wantCalls {
			t.Errorf("n=%d: %d pages listed, want %d", n, l.calls, wantCalls)
		}
	}
}

func TestAllStops(t *testing.T) {
	l := &lister{n: 12, fail: 2}
	n := 0
	err := All(context.Background(), 4, l.list, func(s string) string { return s }, func(string) error { n++; return nil })
	if err == nil || n != 4 {
		t.Errorf("a failing second page: %v after %d records, want its error after 4", err, n)
	}
	stop := errors.New("stop")
	l = &lister{n: 12}
	n = 0
	err = All(context.Background(), 4, l.list, func(s string) string { return s }, func(string) error {
		if n++; n == 6 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 6 || l.calls != 2 {
		t.Errorf("each stopping at the sixth: %v after %d records and %d pages", err, n, l.calls)
	}
}
