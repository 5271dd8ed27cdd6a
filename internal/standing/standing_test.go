package standing

import (
	"testing"
	"time"
)

// TestSlotKeeps: a slot holds the last standing set, read at its time
// under its epoch, trusted from then until between half the TTL and the
// TTL later.
func TestSlotKeeps(t *testing.T) {
	var s Slot[string]
	if s.Load() != nil {
		t.Fatal("an empty slot holds an entry")
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const ttl = 10 * time.Second
	for i := range 100 {
		kept := s.Set("active", uint64(i), now, ttl)
		e := s.Load()
		if &e.V != kept || e.V != "active" || e.Epoch != uint64(i) || !e.Fetched.Equal(now) ||
			e.Until.Before(now.Add(ttl/2)) || e.Until.After(now.Add(ttl)) {
			t.Fatalf("entry %+v after Set at %v", e, now)
		}
	}
}

// TestLifetimeSpread: lifetimes fall between half the TTL and the TTL,
// and are not all the same.
func TestLifetimeSpread(t *testing.T) {
	const ttl = time.Minute
	seen := map[time.Duration]bool{}
	for range 1000 {
		d := lifetime(ttl)
		if d < ttl/2 || d > ttl {
			t.Fatalf("lifetime %v outside [%v, %v]", d, ttl/2, ttl)
		}
		seen[d] = true
	}
	if len(seen) < 2 {
		t.Fatal("every lifetime the same")
	}
}

// TestEpochsShared: a name's counter is the same every time, and a bump
// of it is seen by every later read of the name.
func TestEpochsShared(t *testing.T) {
	e := NewEpochs()
	if e.Of("alice") != e.Of("alice") {
		t.Fatal("a name has two counters")
	}
	before := e.Of("alice").Load()
	e.Of("alice").Add(1)
	if e.Of("alice").Load() != before+1 {
		t.Fatal("a bump was lost")
	}
	distinct := map[any]bool{}
	for i := range 100 {
		distinct[e.Of(string(rune('a'+i)))] = true
	}
	if len(distinct) < 50 {
		t.Fatalf("100 names on %d counters", len(distinct))
	}
}
