package nmauth

import (
	"container/list"
	"context"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"
)

// admission admits work by concurrency: at most limit callers run at
// once, and up to bound more wait, each at most timeout, in a queue that
// is shared fairly rather than first come, first served (DESIGN.md,
// "Overload and fairness"):
//
//   - Callers from an address with a recent right login (see
//     knownClients) wait in a class of their own, which takes seven turns
//     of every eight while both wait, so a flood from addresses that
//     never logged in slows the flood and not the owners, and still
//     cannot starve a new client's first login.
//   - Within a class, waiters are grouped by client group, the IPv4 /24
//     or IPv6 /56 of their address, and the groups take turns: a group of
//     a thousand waiters and a group of one are each admitted once a
//     round. Within a group, first come, first served.
//   - When the queue is full, a newcomer takes the place of the newest
//     waiter of the largest group, if that group is larger than its own
//     would be, or of any unknown waiter if the newcomer is known; else
//     the newcomer is refused. So a flood cannot fill the queue to keep
//     others out.
//
// A caller turned away, pushed out or past timeout gets a [*RetryError]
// for [ErrOverloaded]: 503 with Retry-After over HTTP. The queue's memory
// is bounded by bound; a waiter's deadline starts only once it is
// admitted, since it is the caller's to set after acquire.
type admission struct {
	limit, bound int
	timeout      time.Duration
	known        *knownClients

	mu sync.Mutex
	// running and waiting change under mu; they are atomic so that
	// load may read them without it.
	running, waiting atomic.Int64
	// classes are the waiters of known clients, then of the others.
	classes [2]fairQueue
	// turns counts the slots handed over, for handOver's shares.
	turns uint64
}

// knownShare is how many turns of every knownShare+1 the known clients
// take while others wait too.
const knownShare = 7

// newAdmission returns a gate admitting limit callers at once with bound
// more waiting up to timeout each; known tells the clients with a recent
// right login, and may be nil.
func newAdmission(limit, bound int, timeout time.Duration, known *knownClients) *admission {
	g := &admission{limit: max(limit, 1), bound: max(bound, 0), timeout: timeout, known: known}
	for i := range g.classes {
		g.classes[i].groups = map[netip.Prefix]*waitGroup{}
	}
	return g
}

// waiter is one caller in the queue. Its fields but ready are guarded by
// the admission's mutex.
type waiter struct {
	ready chan struct{}
	group *waitGroup
	class int
	elem  *list.Element
	// admitted is set when a slot was handed over; pushed when the waiter
	// lost its place to a newcomer.
	admitted, pushed bool
}

// waitGroup is the waiters of one client group in one class, oldest
// first, and its place in its class's turn.
type waitGroup struct {
	prefix  netip.Prefix
	waiters list.List
	turn    *list.Element
}

// fairQueue is one class of waiters: the groups with waiters, in the
// order of their turns.
type fairQueue struct {
	groups map[netip.Prefix]*waitGroup
	turns  list.List
}

// clientGroup is the group a client shares its turns with: its IPv4 /24 or
// IPv6 /56. Requests that name no client share the zero prefix.
func clientGroup(addr netip.Addr) netip.Prefix {
	switch {
	case !addr.IsValid():
		return netip.Prefix{}
	case addr.Is4():
		return netip.PrefixFrom(addr, 24).Masked()
	}
	return netip.PrefixFrom(addr, 56).Masked()
}

// defaultQueueTimeout is how long a caller waits at a gate by default
// ([Config.QueueTimeout]): long enough for a burst of ten thousand hosts
// to be served, short enough for a client to retry.
const defaultQueueTimeout = 10 * time.Second

// overloaded is the error of a caller the gate did not admit.
func overloaded() error {
	return &RetryError{Reason: ErrOverloaded, RetryAfter: overloadRetryAfter}
}

// acquire admits the caller from client, at once or after waiting. On
// success the caller must call release. It fails with a [*RetryError] for
// [ErrOverloaded] when the caller is turned away, pushed out, or waits
// longer than the gate's timeout or ctx's deadline, and with ctx.Err()
// when ctx is cancelled.
func (g *admission) acquire(ctx context.Context, client netip.Addr) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if g.waiting.Load() == 0 && g.take() {
		return nil
	}
	// Looked up outside the lock: the caller waits anyway.
	class := 1
	if g.known.has(client) {
		class = 0
	}
	w := &waiter{ready: make(chan struct{}, 1), class: class}
	g.mu.Lock()
	// Counted as waiting before it looks for a slot, so that a release
	// that frees one either sees it waiting or leaves the slot to it (see
	// release).
	g.waiting.Add(1)
	if g.take() {
		g.waiting.Add(-1)
		g.mu.Unlock()
		return nil
	}
	if g.waiting.Load() > int64(g.bound) && !g.pushOut(class, clientGroup(client)) {
		g.waiting.Add(-1)
		g.mu.Unlock()
		return overloaded()
	}
	g.enqueue(w, clientGroup(client))
	g.mu.Unlock()
	return g.wait(ctx, w)
}

// wait waits for w's turn.
func (g *admission) wait(ctx context.Context, w *waiter) error {
	timer := time.NewTimer(g.timeout)
	defer timer.Stop()
	var err error
	select {
	case <-w.ready:
	case <-timer.C:
		err = overloaded()
	case <-ctx.Done():
		err = ctx.Err()
		if errors.Is(err, context.DeadlineExceeded) {
			err = overloaded()
		}
	}
	g.mu.Lock()
	switch {
	case w.pushed:
		err = overloaded()
	case w.admitted && err != nil:
		// The slot came with the timeout: it is the next waiter's.
		g.mu.Unlock()
		g.release()
		return err
	case !w.admitted:
		g.remove(w)
	}
	g.mu.Unlock()
	return err
}

// take takes a free slot, if there is one.
func (g *admission) take() bool {
	for {
		r := g.running.Load()
		if r >= int64(g.limit) {
			return false
		}
		if g.running.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// release hands the caller's slot to the next waiter, or frees it. With
// nobody waiting it takes no lock: it frees the slot, then looks again,
// and a caller that began to wait meanwhile, which counts itself waiting
// before it looks for a free slot, has either taken the slot or is seen
// here and handed one.
func (g *admission) release() {
	if g.waiting.Load() == 0 {
		g.running.Add(-1)
		if g.waiting.Load() == 0 {
			return
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.take() && !g.handOver() {
			g.running.Add(-1)
		}
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.handOver() {
		g.running.Add(-1)
	}
}

// handOver gives the slot its caller holds to the next waiter, and
// reports whether there was one. Known clients take knownShare turns of
// every knownShare+1 while both classes wait: room is kept for them
// without starving the first login of a new client, such as a host of a
// burst that has not yet got in.
func (g *admission) handOver() bool {
	g.turns++
	first := 0
	if g.turns%(knownShare+1) == 0 {
		first = 1
	}
	for k := range g.classes {
		if w := g.classes[(first+k)%len(g.classes)].next(); w != nil {
			g.waiting.Add(-1)
			w.admitted = true
			w.ready <- struct{}{}
			return true
		}
	}
	return false
}

func (g *admission) enqueue(w *waiter, prefix netip.Prefix) {
	q := &g.classes[w.class]
	grp := q.groups[prefix]
	if grp == nil {
		grp = &waitGroup{prefix: prefix}
		grp.turn = q.turns.PushBack(grp)
		q.groups[prefix] = grp
	}
	w.group = grp
	w.elem = grp.waiters.PushBack(w)
}

func (g *admission) remove(w *waiter) {
	g.classes[w.class].drop(w)
	g.waiting.Add(-1)
}

// pushOut makes room for a newcomer of class from group prefix by pushing
// out the newest waiter of the largest group: of the other class if the
// newcomer is known and unknown clients wait, else of its own class if
// that group is larger than the newcomer's would be. It reports whether
// it made room.
func (g *admission) pushOut(class int, prefix netip.Prefix) bool {
	q := &g.classes[class]
	if class == 0 && g.classes[1].turns.Len() > 0 {
		q = &g.classes[1]
	}
	largest := q.largest()
	if largest == nil {
		return false
	}
	if q == &g.classes[class] {
		own := 0
		if grp := q.groups[prefix]; grp != nil {
			own = grp.waiters.Len()
		}
		if largest.waiters.Len() <= own+1 {
			return false
		}
	}
	w := largest.waiters.Back().Value.(*waiter)
	q.drop(w)
	g.waiting.Add(-1)
	w.pushed = true
	w.ready <- struct{}{}
	return true
}

// next takes the oldest waiter of the group whose turn it is, and moves
// that group to the end of the turns; nil when none waits.
func (q *fairQueue) next() *waiter {
	front := q.turns.Front()
	if front == nil {
		return nil
	}
	grp := front.Value.(*waitGroup)
	w := grp.waiters.Front().Value.(*waiter)
	q.drop(w)
	if grp.waiters.Len() > 0 {
		q.turns.MoveToBack(grp.turn)
	}
	return w
}

// drop takes w out of its group, and the group out of the turns once it
// is empty.
func (q *fairQueue) drop(w *waiter) {
	grp := w.group
	grp.waiters.Remove(w.elem)
	if grp.waiters.Len() == 0 {
		q.turns.Remove(grp.turn)
		delete(q.groups, grp.prefix)
	}
}

// largest is the group with the most waiters, nil when none waits. It
// scans the groups: it runs only when the queue is full, and their number
// is at most the queue's bound.
func (q *fairQueue) largest() *waitGroup {
	var best *waitGroup
	for e := q.turns.Front(); e != nil; e = e.Next() {
		if grp := e.Value.(*waitGroup); best == nil || grp.waiters.Len() > best.waiters.Len() {
			best = grp
		}
	}
	return best
}

// load returns how many callers run and how many wait.
func (g *admission) load() (running, waiting int) {
	return int(g.running.Load()), int(g.waiting.Load())
}

// knownClients remembers the client addresses (an IPv6 client by its
// /64, as [clientKey] names it) that made a right login recently, so that
// they wait before others at the gates. Only a right credential adds an
// address, so a flood cannot enter it. Its memory is bounded: past
// maxKnownClients the cache drops the addresses least likely to come back
// (W-TinyLFU), and each is forgotten knownClientLife after the right
// login that added it, unless a later one adds it again.
type knownClients struct {
	c *otter.Cache[netip.Addr, struct{}]
}

const (
	maxKnownClients = 100000
	knownClientLife = 30 * 24 * time.Hour
)

func newKnownClients() *knownClients {
	return &knownClients{c: otter.Must(&otter.Options[netip.Addr, struct{}]{
		MaximumSize:      maxKnownClients,
		ExpiryCalculator: otter.ExpiryWriting[netip.Addr, struct{}](knownClientLife),
	})}
}

// note records a right login from addr. An address already known is not
// written again, so a fleet's logins mostly only read.
func (k *knownClients) note(addr netip.Addr) {
	if !addr.IsValid() {
		return
	}
	if _, ok := k.c.GetIfPresent(addr); !ok {
		k.c.Set(addr, struct{}{})
	}
}

func (k *knownClients) has(addr netip.Addr) bool {
	if k == nil || !addr.IsValid() {
		return false
	}
	_, ok := k.c.GetIfPresent(addr)
	return ok
}

// clientOfContext is the client address of ctx as attempts are counted
// (see [clientKey]): the address, an IPv6 one as its /64; the invalid
// address when ctx names none.
func clientOfContext(ctx context.Context) netip.Addr {
	addr, ok := clientAddrOf(ctx)
	if !ok || !addr.IsValid() {
		return netip.Addr{}
	}
	addr = addr.Unmap()
	if addr.Is6() {
		addr = netip.PrefixFrom(addr, 64).Masked().Addr()
	}
	return addr
}
