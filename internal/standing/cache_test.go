package standing

import (
	"sync/atomic"
	"testing"
)

type key struct{ kind, name string }

type place struct {
	k     key
	epoch *atomic.Uint64
}

func newTestCache(size int) (*Cache[key, place], *int) {
	made := new(int)
	c := NewCache(size, func(k key) string { return k.name }, func(k key, epoch *atomic.Uint64) *place {
		*made++
		return &place{k: k, epoch: epoch}
	})
	return c, made
}

// TestCachePlaces: a key's place is made once and found again, Peek adds
// none, and the place carries its key's epoch counter.
func TestCachePlaces(t *testing.T) {
	c, made := newTestCache(100)
	k := key{"user", "ann"}
	if c.Peek(k) != nil {
		t.Fatal("Peek found a place never made")
	}
	if *made != 0 || c.EstimatedSize() != 0 {
		t.Fatalf("Peek made a place: %d made, size %d", *made, c.EstimatedSize())
	}
	p := c.Place(k)
	if p.k != k || p.epoch != c.Epoch(k) {
		t.Fatalf("place %+v, want key %v and its epoch counter", p, k)
	}
	if c.Place(k) != p || c.Peek(k) != p || *made != 1 {
		t.Fatalf("a second look made another place (%d made)", *made)
	}
	if other := c.Place(key{"host", "ann"}); other == p {
		t.Fatal("two keys share a place")
	} else if other.epoch != p.epoch {
		t.Fatal("keys of one name do not share an epoch")
	}
}

// TestCacheBounded: past its size the cache drops places, and one asked
// for again after it was dropped is made anew with the same epoch.
func TestCacheBounded(t *testing.T) {
	c, _ := newTestCache(10)
	first := c.Place(key{"user", "u0"})
	first.epoch.Add(1)
	for i := range 1000 {
		c.Place(key{"user", string(rune('a'+i%26)) + string(rune('a'+i/26))})
	}
	c.places.CleanUp()
	if n := c.EstimatedSize(); n > 10 {
		t.Fatalf("%d places held, bound 10", n)
	}
	if again := c.Place(key{"user", "u0"}); again.epoch != first.epoch || again.epoch.Load() == 0 {
		t.Fatal("a place made again lost its key's epoch")
	}
}

// TestAccountAdmits: an account admits only a token minted under its
// current generation, while it is active, and not logged out.
func TestAccountAdmits(t *testing.T) {
	a := Account{Active: true, Generation: 3, LoggedOut: []string{"gone"}}
	for _, tc := range []struct {
		acc     Account
		present bool
		gen     uint64
		id      string
		want    bool
	}{
		{a, true, 3, "t1", true},
		{a, true, 3, "", true},
		{a, true, 2, "t1", false},
		{a, false, 3, "t1", false},
		{a, true, 3, "gone", false},
		{Account{Generation: 3}, true, 3, "t1", false},
		{Account{Active: true}, true, 0, "t1", true},
		{Account{Active: true}, false, 0, "t1", false},
	} {
		if got := tc.acc.Admits(tc.present, tc.gen, tc.id); got != tc.want {
			t.Errorf("%+v.Admits(%v, %d, %q) = %v, want %v", tc.acc, tc.present, tc.gen, tc.id, got, tc.want)
		}
	}
}
