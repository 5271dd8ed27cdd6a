package gate

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"slices"
	"sync/atomic"
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
// was admitted (it then releases the slot at once, once answered).
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
		// Answered before the slot goes on, so that the answers come in
		// the order the slot went round.
		r.done <- gateAnswer{name, err}
		if err == nil {
			r.g.Release(1)
		}
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
	r.g.Release(1)
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

// weightRun drives a gate of limit slots whose callers, once admitted,
// hold their slots until the test lets them go, so that the test sees
// who runs together.
type weightRun struct {
	t        *testing.T
	g        *Gate[accountKey]
	admitted chan gateAnswer
	// let lets a caller go by its name: it releases what it holds.
	let map[string]chan struct{}
}

func newWeightRun(t *testing.T, limit, bound int) *weightRun {
	g := New[accountKey](limit, bound, time.Minute, func() error { return errOverloaded }, func() error { return errThrottled })
	return &weightRun{t: t, g: g, admitted: make(chan gateAnswer, 64), let: map[string]chan struct{}{}}
}

// arrive sends a caller of e's weight to the gate and returns once it
// was admitted or waits.
func (r *weightRun) arrive(name string, e entrant) {
	r.t.Helper()
	let := make(chan struct{})
	r.let[name] = let
	running, waiting := r.g.Load()
	go func() {
		err := r.g.Acquire(context.Background(), e)
		r.admitted <- gateAnswer{name, err}
		if err == nil {
			<-let
			r.g.Release(e.Weight)
		}
	}()
	r.await(func(run, w int) bool { return run != running || w != waiting })
}

// await yields until the gate's load satisfies ok; a gate that never
// does fails the test by its deadline.
func (r *weightRun) await(ok func(running, waiting int) bool) {
	r.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
		if ok(r.g.Load()) {
			return
		}
	}
	running, waiting := r.g.Load()
	r.t.Fatalf("the gate stays at %d running, %d waiting", running, waiting)
}

// wantLoad checks the slots held and the callers waiting.
func (r *weightRun) wantLoad(running, waiting int, when string) {
	r.t.Helper()
	if gotR, gotW := r.g.Load(); gotR != running || gotW != waiting {
		r.t.Errorf("%s: %d slots held, %d waiting; want %d, %d", when, gotR, gotW, running, waiting)
	}
}

// admits reads the answers of the callers admitted next, which must be
// names, in any order: the gate admits them together.
func (r *weightRun) admits(names ...string) {
	r.t.Helper()
	var got []string
	for range names {
		select {
		case a := <-r.admitted:
			if a.err != nil {
				r.t.Fatalf("%s: %v; want admitted", a.name, a.err)
			}
			got = append(got, a.name)
		case <-time.After(10 * time.Second):
			r.t.Fatalf("admitted %v; want %v", got, names)
		}
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(names))
	if !slices.Equal(got, want) {
		r.t.Errorf("admitted %v; want %v", got, want)
	}
}

// release lets the named callers go.
func (r *weightRun) release(names ...string) {
	for _, n := range names {
		close(r.let[n])
	}
}

// TestWeightedCallerHoldsItsWeight: a caller of four threads at a gate
// of two slots holds both (held to the limit, so that it can run) and
// nothing else runs beside it, as a hash of four lanes runs on every
// core the gate admits. When it ends, the two that waited run together.
func TestWeightedCallerHoldsItsWeight(t *testing.T) {
	r := newWeightRun(t, 2, 8)
	r.arrive("p4", entrant{Client: slash24(1), Class: ClassNew, Weight: 4})
	r.admits("p4")
	r.wantLoad(2, 0, "a caller of weight 4 at a gate of 2")
	r.arrive("light-1", entrant{Client: slash24(2), Class: ClassNew})
	r.arrive("light-2", entrant{Client: slash24(3), Class: ClassNew})
	r.wantLoad(2, 2, "two more while it runs")
	r.release("p4")
	r.admits("light-1", "light-2")
	r.wantLoad(2, 0, "after it")
	r.release("light-1", "light-2")
	r.await(func(running, waiting int) bool { return running == 0 && waiting == 0 })
}

// TestWeightedHeadKeepsFreedSlots: a heavy caller whose turn comes while
// fewer slots are free than it needs keeps those that free up, and the
// lighter callers after it wait although a slot is free, so that a
// stream of light callers never starves it; once it has run, they run,
// so it holds them up only as long as the work before it ran.
func TestWeightedHeadKeepsFreedSlots(t *testing.T) {
	r := newWeightRun(t, 2, 8)
	r.arrive("running", entrant{Client: slash24(1), Class: ClassNew})
	r.admits("running")
	r.arrive("heavy", entrant{Client: slash24(2), Class: ClassNew, Weight: 2})
	r.wantLoad(1, 1, "a heavy caller with one slot free")
	for i := range 3 {
		r.arrive(fmt.Sprint("light-", i), entrant{Client: slash24(3 + i), Class: ClassNew})
	}
	r.wantLoad(1, 4, "light callers after it, with one slot free")
	r.release("running")
	r.admits("heavy")
	r.wantLoad(2, 3, "the heavy caller runs")
	r.release("heavy")
	r.admits("light-0", "light-1")
	r.wantLoad(2, 1, "after the heavy caller")
	r.release("light-0")
	r.admits("light-2")
	r.release("light-1", "light-2")
	r.await(func(running, waiting int) bool { return running == 0 && waiting == 0 })
}

// TestWeightedTurnsStayFair: a heavy caller takes its group's turn as a
// light one does, no sooner and no later: the groups take turns in the
// order they would with every caller of weight one, and the known still
// go first.
func TestWeightedTurnsStayFair(t *testing.T) {
	r := newWeightRun(t, 2, 8)
	r.arrive("holder", entrant{Client: slash24(0), Class: ClassNew, Weight: 2})
	r.admits("holder")
	a, b, c := slash24(1), slash24(2), slash24(3)
	r.arrive("a-heavy", entrant{Client: a, Class: ClassNew, Weight: 2})
	r.arrive("a-light", entrant{Client: a, Class: ClassNew})
	r.arrive("b-light", entrant{Client: b, Class: ClassNew})
	r.arrive("c-heavy", entrant{Client: c, Class: ClassNew, Weight: 2})
	r.arrive("known", entrant{Client: c, Account: accountKey{"user", "alice"}, Class: ClassKnown})
	r.wantLoad(2, 5, "five waiting behind a holder of both slots")
	// The known first; then a's heavy caller, whose group's turn it is,
	// keeps the slot freed beside the known's.
	r.release("holder")
	r.admits("known")
	r.wantLoad(1, 4, "the known runs and a's heavy caller waits for the other slot")
	r.release("known")
	r.admits("a-heavy")
	r.release("a-heavy")
	// Then b and c in turn: c's heavy caller waits for b's slot.
	r.admits("b-light")
	r.wantLoad(1, 2, "b's light caller runs, c's heavy one waits for the other slot")
	r.release("b-light")
	r.admits("c-heavy")
	r.release("c-heavy")
	r.admits("a-light")
	r.release("a-light")
	r.await(func(running, waiting int) bool { return running == 0 && waiting == 0 })
}

// TestWeightedHeadGivesUp: a heavy caller that stops waiting while it
// keeps a free slot leaves that slot to the callers after it.
func TestWeightedHeadGivesUp(t *testing.T) {
	r := newWeightRun(t, 2, 8)
	r.arrive("running", entrant{Client: slash24(1), Class: ClassNew})
	r.admits("running")
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- r.g.Acquire(ctx, entrant{Client: slash24(2), Class: ClassNew, Weight: 2}) }()
	r.await(func(_, waiting int) bool { return waiting == 1 })
	r.arrive("light", entrant{Client: slash24(3), Class: ClassNew})
	r.wantLoad(1, 2, "a light caller behind the heavy one")
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Errorf("the heavy caller that gave up: %v; want context.Canceled", err)
	}
	r.admits("light")
	r.wantLoad(2, 0, "the light caller took the slot kept for the heavy one")
	r.release("running", "light")
	r.await(func(running, waiting int) bool { return running == 0 && waiting == 0 })
}

// TestGrow: a caller that learns once it runs that its work takes more
// slots than it holds gets them before any caller waiting in the queue,
// and two such callers at a gate of two slots, each holding one, do not
// wait for each other for ever: each gives its slot back while it waits.
func TestGrow(t *testing.T) {
	t.Run("before the queue", func(t *testing.T) {
		r := newWeightRun(t, 2, 8)
		r.arrive("other", entrant{Client: slash24(1), Class: ClassNew})
		r.admits("other")
		if err := r.g.Acquire(context.Background(), entrant{Client: slash24(2), Class: ClassNew}); err != nil {
			t.Fatal(err)
		}
		r.arrive("queued", entrant{Client: slash24(3), Account: accountKey{"user", "alice"}, Class: ClassKnown})
		grown := make(chan error, 1)
		go func() { grown <- r.g.Grow(context.Background(), 1, 4) }()
		r.await(func(running, waiting int) bool { return running == 1 && waiting == 2 })
		r.release("other")
		if err := <-grown; err != nil {
			t.Fatalf("Grow: %v", err)
		}
		r.wantLoad(2, 1, "grown to the limit before the queue")
		r.g.Release(4)
		r.admits("queued")
		r.release("queued")
		r.await(func(running, waiting int) bool { return running == 0 && waiting == 0 })
	})
	t.Run("two at once", func(t *testing.T) {
		g := New[accountKey](2, 8, time.Minute, func() error { return errOverloaded }, func() error { return errThrottled })
		for range 2 {
			if err := g.Acquire(context.Background(), entrant{Client: slash24(1), Class: ClassNew}); err != nil {
				t.Fatal(err)
			}
		}
		ran := make(chan int, 2)
		var held atomic.Int64
		for i := range 2 {
			go func() {
				if err := g.Grow(context.Background(), 1, 2); err != nil {
					t.Errorf("Grow %d: %v", i, err)
					ran <- i
					return
				}
				if running, _ := g.Load(); running != 2 || held.Add(1) != 1 {
					t.Errorf("grower %d runs beside another: %d slots held", i, running)
				}
				held.Add(-1)
				ran <- i
				g.Release(2)
			}()
		}
		<-ran
		<-ran
		for running, waiting := g.Load(); running != 0 || waiting != 0; running, waiting = g.Load() {
			runtime.Gosched()
		}
	})
}
