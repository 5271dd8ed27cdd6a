package expiry

import (
	"slices"
	"testing"
	"time"
)

// TestPopDue: entries come up soonest first, those due at now included,
// and those after now stay.
func TestPopDue(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	var h Heap[string]
	none := func(func(time.Time, string)) { t.Fatal("rebuilt below the bound") }
	for _, k := range []struct {
		key string
		sec int
	}{{"c", 3}, {"a", 1}, {"d", 4}, {"b", 2}} {
		h.Push(base.Add(time.Duration(k.sec)*time.Second), k.key, 4, none)
	}
	var got []string
	h.PopDue(base.Add(2*time.Second), func(key string, at time.Time) { got = append(got, key) })
	if want := []string{"a", "b"}; !slices.Equal(got, want) {
		t.Errorf("due at +2s: %v; want %v", got, want)
	}
	if h.Len() != 2 {
		t.Errorf("Len after = %d; want 2", h.Len())
	}
}

// TestPushRebuilds: once stale entries outnumber the live values twice
// over and 64 more, the heap holds only what each gives.
func TestPushRebuilds(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	var h Heap[int]
	rebuilt := 0
	live := func(add func(time.Time, int)) {
		rebuilt++
		add(base.Add(time.Hour), 7)
	}
	for i := range 66 {
		h.Push(base.Add(time.Duration(i)*time.Second), i, 1, live)
	}
	if rebuilt != 0 || h.Len() != 66 {
		t.Fatalf("after 66 pushes with one live: rebuilt %d times, %d entries; want 0, 66", rebuilt, h.Len())
	}
	h.Push(base, 66, 1, live)
	if rebuilt != 1 || h.Len() != 1 {
		t.Fatalf("after 67 pushes with one live: rebuilt %d times, %d entries; want 1, 1", rebuilt, h.Len())
	}
	var got []int
	h.PopDue(base.Add(2*time.Hour), func(key int, _ time.Time) { got = append(got, key) })
	if !slices.Equal(got, []int{7}) {
		t.Errorf("after the rebuild: %v; want [7]", got)
	}
}
