package knownset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// names lists the names of a sorted listing after after, n at a time,
// failing the reads that fail says to.
type names struct {
	all   []string
	reads int
	fail  func(read int) bool
}

var errList = errors.New("list failed")

func (l *names) list(_ context.Context, after string, n int) ([]string, error) {
	l.reads++
	if l.fail != nil && l.fail(l.reads) {
		return nil, errList
	}
	i, _ := slices.BinarySearch(l.all, after)
	if i < len(l.all) && l.all[i] == after {
		i++
	}
	return l.all[i:min(i+n, len(l.all))], nil
}

func listing(n int) *names {
	l := &names{}
	for i := range n {
		l.all = append(l.all, fmt.Sprintf("host-%04d", i))
	}
	return l
}

func self(s string) string { return s }

// TestFillReadsAll: every account is added once, in order, in batches,
// whether the last batch is full or not.
func TestFillReadsAll(t *testing.T) {
	for _, n := range []int{0, 1, 9, 10, 25, 30} {
		l := listing(n)
		var got []string
		if err := Fill(context.Background(), 10, 3, l.list, self, func(s string) { got = append(got, s) }); err != nil {
			t.Fatalf("%d accounts: %v", n, err)
		}
		if !slices.Equal(got, l.all) {
			t.Fatalf("%d accounts: added %v", n, got)
		}
		if want := n/10 + 1; l.reads != want {
			t.Errorf("%d accounts: %d reads, want %d", n, l.reads, want)
		}
	}
}

// TestFillGivesUp: after tries failed reads in a row Fill returns the
// error, having added what it read before.
func TestFillGivesUp(t *testing.T) {
	l := listing(25)
	l.fail = func(read int) bool { return read > 1 }
	var got []string
	err := Fill(context.Background(), 10, 1, l.list, self, func(s string) { got = append(got, s) })
	if !errors.Is(err, errList) {
		t.Fatalf("Fill returned %v, want the listing's error", err)
	}
	if len(got) != 10 || l.reads != 2 {
		t.Errorf("added %d in %d reads, want 10 in 2", len(got), l.reads)
	}
}

// TestFillRetries: a failed read is tried again, a second later, and the
// count of failures starts over after a read that succeeds.
func TestFillRetries(t *testing.T) {
	l := listing(15)
	l.fail = func(read int) bool { return read == 1 || read == 3 }
	var got []string
	begin := time.Now()
	if err := Fill(context.Background(), 10, 2, l.list, self, func(s string) { got = append(got, s) }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, l.all) || l.reads != 4 {
		t.Errorf("added %d in %d reads, want 15 in 4", len(got), l.reads)
	}
	if d := time.Since(begin); d < 2*time.Second {
		t.Errorf("two retries took %v, want a second's wait each", d)
	}
}

// TestFillStops: Fill returns nil, adding nothing more, once ctx ends,
// also while it waits to try again.
func TestFillStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	l := listing(25)
	l.fail = func(int) bool { cancel(); return true }
	begin := time.Now()
	if err := Fill(ctx, 10, 5, l.list, self, func(string) { t.Error("added after ctx ended") }); err != nil {
		t.Fatalf("Fill returned %v after ctx ended", err)
	}
	if l.reads != 1 || time.Since(begin) > 500*time.Millisecond {
		t.Errorf("%d reads in %v after ctx ended", l.reads, time.Since(begin))
	}

	ctx, cancel = context.WithCancel(context.Background())
	l = listing(25)
	l.fail = func(int) bool { time.AfterFunc(50*time.Millisecond, cancel); return true }
	begin = time.Now()
	if err := Fill(ctx, 10, 5, l.list, self, func(string) {}); err != nil || time.Since(begin) > 900*time.Millisecond {
		t.Errorf("Fill returned %v after %v when ctx ended during its wait", err, time.Since(begin))
	}
}
