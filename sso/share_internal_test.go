package sso

import (
	"errors"
	"net/netip"
	"testing"
)

// TestRoomFor: a group's first place is free until all are taken, a
// group alone reaches its share, and a group's room shrinks as the places
// fill.
func TestRoomFor(t *testing.T) {
	for _, c := range []struct {
		name                     string
		used, held, total, share int
		want                     bool
	}{
		{"empty", 0, 0, 10000, 100, true},
		{"first place, one left", 9999, 0, 10000, 100, true},
		{"first place, none left", 10000, 0, 10000, 100, false},
		{"alone, one short of its share", 99, 99, 10000, 100, true},
		{"alone, at its share", 100, 100, 10000, 100, false},
		{"holding 16 among 8,300", 8300, 16, 10000, 100, true},
		{"holding 16 among 8,400", 8400, 16, 10000, 100, false},
		{"holding one, 9,899 taken", 9899, 1, 10000, 100, true},
		{"holding one, 9,900 taken", 9900, 1, 10000, 100, false},
		{"websockets: alone, 7", 7, 7, 64, 8, true},
		{"websockets: alone, 8", 8, 8, 64, 8, false},
	} {
		if got := roomFor(c.used, c.held, c.total, c.share); got != c.want {
			t.Errorf("%s: roomFor(%d, %d, %d, %d) = %v, want %v", c.name, c.used, c.held, c.total, c.share, got, c.want)
		}
	}
}

// TestSocketsPushOut: with 4 places and a share of 2, a group takes 2 and
// its 3rd is ErrGroupShare; once all 4 are held, a group that holds none
// takes the place of the oldest websocket of the largest group, which is
// told through its pushed channel, and whose release then frees nothing.
func TestSocketsPushOut(t *testing.T) {
	s := &sockets{total: 4, share: 2}
	a, b, c, d := netip.MustParsePrefix("10.0.0.0/24"), netip.MustParsePrefix("10.0.1.0/24"),
		netip.MustParsePrefix("10.0.2.0/24"), netip.MustParsePrefix("10.0.3.0/24")
	take := func(g netip.Prefix) *socket {
		t.Helper()
		sk, err := s.take(g)
		if err != nil {
			t.Fatalf("take(%v): %v", g, err)
		}
		return sk
	}
	a1, a2 := take(a), take(a)
	if _, err := s.take(a); !errors.Is(err, ErrGroupShare) {
		t.Fatalf("a third place for a group with a share of 2: %v", err)
	}
	take(b)
	if _, err := s.take(b); !errors.Is(err, ErrGroupShare) {
		t.Fatalf("a second place for a group holding one, 3 of 4 held: %v", err)
	}
	take(c)
	d1 := take(d)
	select {
	case <-a1.pushed:
	default:
		t.Fatal("the oldest websocket of the largest group was not pushed out")
	}
	select {
	case <-a2.pushed:
		t.Fatal("a newer websocket was pushed out too")
	default:
	}
	s.release(a1)
	if s.n != 4 {
		t.Fatalf("%d places held after the pushed one's release, want 4", s.n)
	}
	s.release(d1)
	if s.n != 3 || len(s.groups[d]) != 0 {
		t.Fatalf("after a release: %d held, group d holds %d", s.n, len(s.groups[d]))
	}
}
