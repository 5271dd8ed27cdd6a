package gate

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

// accountKey is an account as the tests name it; a gate takes any
// comparable key.
type accountKey struct{ kind, name string }

// entrant is a caller of the gates of these tests.
type entrant = Entrant[accountKey]

// errOverloaded is what the gates of these tests refuse with.
var errOverloaded = errors.New("gate test: overloaded")

// errThrottled is what they refuse a caller with whose account holds its
// share.
var errThrottled = errors.New("gate test: throttled")

// gateRun drives an admission gate from a test: its one slot is held by
// the test, every caller waits in a goroutine of its own, and each
// answer comes back on done, so that the test sees who was refused or
// pushed out, and in which order the slot went round.
type gateRun struct {
	t    *testing.T
	g    *Gate[accountKey]
	done chan gateAnswer
}

// gateAnswer is one caller's answer: its name, and its error, nil when it
// was admitted (it then releases the slot at once).
type gateAnswer struct {
	name string
	err  error
}

// newGateRun makes a gate of one slot and bound places, with draws from
// a seeded source, and takes the slot.
func newGateRun(t *testing.T, bound int, seed uint64) *gateRun {
	g := New[accountKey](1, bound, time.Minute, func() error { return errOverloaded }, func() error { return errThrottled })
	g.draw = rand.New(rand.NewPCG(seed, seed+1)).IntN
	if err := g.Acquire(context.Background(), entrant{Client: netip.MustParseAddr("192.0.2.250")}); err != nil {
		t.Fatal(err)
	}
	return &gateRun{t: t, g: g, done: make(chan gateAnswer, 4*bound+16)}
}

// arrive sends a caller to the gate and returns once it waits or
// somebody was answered; at a gate whose queue is full, at once, for the
// caller of arrive reads the answer.
func (r *gateRun) arrive(name string, e entrant) {
	r.t.Helper()
	_, before := r.g.Load()
	full := before >= r.g.bound
	go func() {
		err := r.g.Acquire(context.Background(), e)
		if err == nil {
			r.g.Release()
		}
		r.done <- gateAnswer{name, err}
	}()
	if full {
		return // the caller of arrive reads the answer
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
		if _, w := r.g.Load(); w != before || len(r.done) > 0 {
			return
		}
	}
	r.t.Fatalf("%s neither waits nor was answered", name)
}

// refused reads the answer that a full gate gives to one arrival: the
// name of the caller refused or pushed out.
func (r *gateRun) refused() string {
	r.t.Helper()
	return r.answered(errOverloaded)
}

// throttled is refused for a caller refused as throttled: its account
// held its share of the queue.
func (r *gateRun) throttled() string {
	r.t.Helper()
	return r.answered(errThrottled)
}

// answered returns the name of the next caller answered, which must have
// been refused with want.
func (r *gateRun) answered(want error) string {
	r.t.Helper()
	select {
	case a := <-r.done:
		if !errors.Is(a.err, want) {
			r.t.Fatalf("%s: %v; want %v", a.name, a.err, want)
		}
		return a.name
	case <-time.After(10 * time.Second):
		r.t.Fatal("nobody was answered")
	}
	return ""
}

// drain releases the test's slot and returns the names in the order the
// slot went to them.
func (r *gateRun) drain() []string {
	r.t.Helper()
	_, waiting := r.g.Load()
	r.g.Release()
	var order []string
	for range waiting {
		a := <-r.done
		if a.err != nil {
			r.t.Fatalf("%s: %v after the slot was released", a.name, a.err)
		}
		order = append(order, a.name)
	}
	if running, w := r.g.Load(); running != 0 || w != 0 {
		r.t.Errorf("after all: %d running, %d waiting; want none", running, w)
	}
	return order
}

// slash24 is the i-th address of a flood from many IPv4 /24s, one
// address in each.
func slash24(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, byte(i / 256), byte(i % 256), 7})
}

// TestAdmissionManyGroupsOfOne fills the queue of 64 places with callers
// from 64 /24s, one each, and sends 400 newcomers, each from a /24 of its
// own, as a flood from a hundred and more groups does: a newcomer must
// get a place about as often as a waiter keeps one, 64 times in 65, not
// be refused because no group is larger than its own. Then it does the
// same for IPv6 /56s.
func TestAdmissionManyGroupsOfOne(t *testing.T) {
	for _, tc := range []struct {
		name string
		addr func(i int) netip.Addr
	}{
		{"IPv4 /24s", slash24},
		{"IPv6 /56s", func(i int) netip.Addr {
			return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, byte(0x77 + i/256), byte(i), 15: 1})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const bound, newcomers = 64, 400
			r := newGateRun(t, bound, 1)
			for i := range bound {
				r.arrive(fmt.Sprint("flood-", i), entrant{Client: tc.addr(i), Class: ClassNew})
			}
			placed := 0
			for i := range newcomers {
				name := fmt.Sprint("newcomer-", i)
				r.arrive(name, entrant{Client: tc.addr(bound + i), Class: ClassNew})
				if r.refused() != name {
					placed++
				}
			}
			// 64 in 65 would be 394; a draw that never favoured the
			// newcomer gives 0, the gate before SFQ gave 0.
			if placed < newcomers*9/10 {
				t.Errorf("%d of %d newcomers from groups of one got a place in a queue full of groups of one; want about %d",
					placed, newcomers, newcomers*bound/(bound+1))
			}
			if placed == newcomers {
				t.Errorf("every newcomer got a place: a newcomer's own group was never drawn, so ties are not drawn fairly")
			}
			if got := len(r.drain()); got != bound {
				t.Errorf("%d admitted after the flood; want the %d places", got, bound)
			}
		})
	}
}

// TestAdmissionPushesFromLongestGroup: a full queue with one large group
// and groups of one gives a newcomer the large group's newest place,
// never a group of one's; and a newcomer from the large group itself is
// refused.
func TestAdmissionPushesFromLongestGroup(t *testing.T) {
	r := newGateRun(t, 6, 2)
	big := netip.MustParseAddr("192.0.2.1")
	for i := range 4 {
		r.arrive(fmt.Sprint("big-", i), entrant{Client: big.Next(), Class: ClassNew})
	}
	r.arrive("small-1", entrant{Client: slash24(1), Class: ClassNew})
	r.arrive("small-2", entrant{Client: slash24(2), Class: ClassNew})
	r.arrive("newcomer", entrant{Client: slash24(3), Class: ClassNew})
	if got := r.refused(); got != "big-3" {
		t.Errorf("pushed out %s; want big-3, the newest of the longest group", got)
	}
	r.arrive("big-again", entrant{Client: big, Class: ClassNew})
	if got := r.refused(); got != "big-again" {
		t.Errorf("a newcomer of the longest group: %s was answered; want the newcomer itself", got)
	}
	want := []string{"big-0", "small-1", "small-2", "newcomer", "big-1", "big-2"}
	if got := r.drain(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("admitted in the order %v; want %v (groups in turn)", got, want)
	}
}

// TestAdmissionClasses: names that do not exist fill the queue; an
// account from a new address takes the place of one of them, and so does
// an account at its known address; the slot then goes to the known, then
// the new, and to names that do not exist only when nobody else waits.
// Seven turns in eight go to the known while new ones wait.
func TestAdmissionClasses(t *testing.T) {
	r := newGateRun(t, 12, 3)
	for i := range 12 {
		r.arrive(fmt.Sprint("nobody-", i), entrant{Client: slash24(i), Class: ClassNobody})
	}
	for i := range 2 {
		name := fmt.Sprint("new-", i)
		r.arrive(name, entrant{Client: slash24(100 + i), Class: ClassNew})
		if got := r.refused(); got == name {
			t.Fatalf("%s was refused; want a name that does not exist pushed out", name)
		}
	}
	for i := range 9 {
		name := fmt.Sprint("known-", i)
		r.arrive(name, entrant{Client: slash24(200 + i), Class: ClassKnown})
		if got := r.refused(); got == name || got[:6] != "nobody" {
			t.Fatalf("%s: %s was answered; want a name that does not exist pushed out", name, got)
		}
	}
	got := r.drain()
	want := []string{"known-0", "known-1", "known-2", "known-3", "known-4", "known-5", "known-6", "new-0",
		"known-7", "known-8", "new-1", "nobody"}
	for i, name := range got {
		if w := want[i]; name != w && (w != "nobody" || name[:6] != "nobody") {
			t.Fatalf("admitted in the order %v; want %v", got, want)
		}
	}
}

// TestAdmissionAccountShare: one account's logins, from as many groups
// as it likes and at its known addresses, hold at most an eighth of the
// queue; a newcomer of the account past its share is refused, and the
// rest of the queue stays for others. The known wait in a group per
// account, so a full queue pushes out mallory's newest for alice.
func TestAdmissionAccountShare(t *testing.T) {
	const bound = 32
	r := newGateRun(t, bound, 4)
	mallory := accountKey{kind: "user", name: "mallory"}
	share := bound / accountShareOf
	for i := range 50 {
		name := fmt.Sprint("mallory-", i)
		r.arrive(name, entrant{Client: slash24(i), Account: mallory, Class: ClassKnown})
		if i < share {
			continue
		}
		if got := r.throttled(); got != name {
			t.Fatalf("mallory's login %d past its share: %s was answered; want the newcomer throttled", i, got)
		}
	}
	if _, w := r.g.Load(); w != share {
		t.Fatalf("mallory's 50 logins hold %d places; want its share, %d", w, share)
	}
	alice := accountKey{kind: "user", name: "alice"}
	for i := range bound - share {
		r.arrive(fmt.Sprint("other-", i), entrant{Client: slash24(100), Account: accountKey{kind: "user", name: fmt.Sprint("user-", i)}, Class: ClassKnown})
	}
	r.arrive("alice", entrant{Client: slash24(101), Account: alice, Class: ClassKnown})
	// The known wait by account: mallory's four are the longest group.
	if got := r.refused(); got != fmt.Sprint("mallory-", share-1) {
		t.Errorf("with the queue full, %s was answered; want mallory's newest, of the longest group", got)
	}
	r.drain()
}
