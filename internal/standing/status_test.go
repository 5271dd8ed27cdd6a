package standing

import (
	"context"
	"testing"
	"time"
)

// TestStatusKeepsAndForgets: a standing read once is answered without a
// second read until the account is forgotten, and a read that began
// before a Forget is not kept.
func TestStatusKeepsAndForgets(t *testing.T) {
	reads := 0
	var during func()
	c := NewStatus[key, int, struct{}](time.Minute, 100, func(k key) string { return k.name }, func(context.Context, key) (int, error) {
		reads++
		if during != nil {
			during()
		}
		return reads, nil
	})
	now := time.Now()
	k := key{"user", "ann"}
	r := c.Ref(&k)
	for range 3 {
		if v, err := c.Standing(context.Background(), r, now); err != nil || *v != 1 {
			t.Fatalf("standing %v, %v; want the first read's 1", v, err)
		}
	}
	c.Forget(k)
	if v, _ := c.Standing(context.Background(), r, now); *v != 2 {
		t.Fatalf("after Forget, standing %d, want a second read's 2", *v)
	}
	during = func() { c.Forget(k) }
	c.Forget(k)
	c.Standing(context.Background(), r, now)
	during = nil
	if v, _ := c.Standing(context.Background(), r, now); *v != 4 {
		t.Fatalf("a read overtaken by a Forget was kept: standing %d, want a fresh read's 4", *v)
	}
	if hits, misses, size := c.Counts(10); misses != 4 || hits != 6 || size != 1 {
		t.Fatalf("counts %d hits, %d misses, %d held; want 6, 4, 1", hits, misses, size)
	}
}

// TestStatusOff: a Status of no TTL keeps nothing and reads every time.
func TestStatusOff(t *testing.T) {
	reads := 0
	c := NewStatus[key, int, struct{}](-1, 100, func(k key) string { return k.name }, func(context.Context, key) (int, error) {
		reads++
		return reads, nil
	})
	k := key{"host", "h1"}
	if c.On() || c.Peek(k) != nil || c.Ref(nil) != nil {
		t.Fatal("a Status that keeps nothing holds a place")
	}
	for want := 1; want <= 2; want++ {
		if v, _ := c.Standing(context.Background(), c.Ref(&k), time.Now()); *v != want {
			t.Fatalf("standing %d, want read %d", *v, want)
		}
	}
	c.Forget(k)
	if hits, misses, size := c.Counts(5); hits|misses != 0 || size != 0 {
		t.Fatal("a Status that keeps nothing counts")
	}
}
