// Package gate is the fair admission gate of the work a login costs: at
// most a number of callers run at once, and a bounded number more wait in
// a queue shared fairly among classes of callers, client groups and
// accounts, rather than first come, first served. It knows nothing of
// logins beyond what its caller tells of each one (an [Entrant]); the
// account key A is the caller's own.
package gate

import (
	"container/list"
	"context"
	"errors"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Gate admits work by concurrency: at most limit slots are held at
// once, and up to bound more callers wait, each at most timeout, in a
// queue that is shared fairly rather than first come, first served
// (DESIGN.md, "Overload and fairness"):
//
//   - A caller holds as many slots as its work runs threads (its
//     weight, see Entrant.Weight and Grow), at most limit, so that limit
//     bounds the cores the work takes, not only the callers. Most hold
//     one. A caller whose turn comes while fewer slots are free than its
//     weight is the head: the slots freed are kept for it and nobody is
//     admitted before it, so it is never starved by lighter callers, and
//     it holds up the others only until the work that runs ends. A
//     caller that learns its weight only once it runs grows to it
//     (Grow): it gives its slots back and waits before every class.
//   - A caller that must wait is placed in a class (see Entrant[A]): an
//     account at an address it logged in rightly from before
//     (ClassKnown), an account that exists from another address
//     (ClassNew), or a name that no account has (ClassNobody). The known
//     take seven turns of every eight while the new wait too, so a flood
//     slows the flood and not the owners, and still cannot starve a new
//     device's first login. A name that does not exist gets a turn only
//     when nobody else waits.
//   - Within a class, waiters are grouped by client group, the IPv4 /24
//     or IPv6 /56 of their address, and the groups take turns: a group of
//     a thousand waiters and a group of one are each admitted once a
//     round. Within a group, first come, first served. The known are
//     grouped by account instead: an account has few known addresses,
//     and one account's many, made known by its own right logins, take
//     one turn of the round as an owner's one does.
//   - One account holds at most share places of a class's queue (an
//     eighth, see accountShareOf): a newcomer of an account past it is
//     refused with the gate's throttle error, so one account's logins,
//     right or wrong, cannot fill the
//     queue, and the known addresses of one account take no more of the
//     known's turns than that.
//   - When the queue is full, a newcomer takes the place of a waiter of a
//     lower class, if one waits; else, as stochastic fairness queueing
//     drops from the longest flow, of the newest waiter of the longest
//     group of its own class, counting itself in its own group, with
//     ties drawn at random. A newcomer whose own group is drawn is
//     refused. So a hundred groups of one cannot keep a newcomer out: it
//     has the same chance of a place as each of them.
//
// A caller turned away, pushed out or past timeout gets the error of the
// gate's refuse (nmauth's: a RetryError for ErrOverloaded, 503 with
// Retry-After over HTTP). The queue's memory is bounded by bound, and
// that of the callers that grow by limit; a
// waiter's deadline starts only once it is admitted, since it is the
// caller's to set after Acquire.
type Gate[A comparable] struct {
	limit, bound int
	// share is how many places of a class's queue one account may hold.
	share   int
	timeout time.Duration
	// draw returns a number in [0, n); tests make it deterministic.
	draw func(n int) int
	// refuse makes the error of a caller the gate did not admit;
	// throttle that of a caller whose account holds its share.
	refuse, throttle func() error

	mu sync.Mutex
	// running is the slots held; waiting the callers that wait, the head
	// and the growers included. They are atomic so that Load, and the
	// paths of a gate where nobody waits, may read and change them
	// without mu; with somebody waiting they change under it.
	running, waiting atomic.Int64
	classes          [numClasses]fairQueue[A]
	// head is the waiter whose turn came while fewer slots were free
	// than its weight; nil when none. It is in no queue.
	head *waiter[A]
	// growers are the callers that gave back their slots to wait for
	// more (see Grow), oldest first: their turn came already, so they
	// are served before every class.
	growers list.List
	// accounts counts the waiters of each account in each class.
	accounts map[accountPlace[A]]int
	// turns counts the turns taken from the classes, for next's shares.
	turns uint64
}

// The classes of the callers that wait at a gate, in the order they are
// served and the reverse of the order they are pushed out.
const (
	// ClassKnown is an account at a client address it has logged in
	// rightly from (a Known entry of its stored clients).
	ClassKnown = iota
	// ClassNew is an account that exists, from any other address; and a
	// caller the gate could not place, such as one whose read failed.
	ClassNew
	// ClassNobody is a name no account has, or input no account could
	// match.
	ClassNobody
	numClasses
)

// knownShare is how many turns of every knownShare+1 the known clients
// take while new ones wait too.
const knownShare = 7

// accountShareOf is the share of a class's queue, one part in
// accountShareOf, that one account may hold; but at least
// minAccountShare places, or the whole of a smaller queue, so that an
// account's few logins at once, a user on two devices say, never push
// each other out.
const (
	accountShareOf  = 8
	minAccountShare = 4
)

// New returns a gate of limit slots with bound more callers waiting up
// to timeout each; refuse makes the error of a caller it does
// not admit, and throttle that of a caller whose account holds its share
// of a queue that has room for more than one account.
func New[A comparable](limit, bound int, timeout time.Duration, refuse, throttle func() error) *Gate[A] {
	g := &Gate[A]{limit: max(limit, 1), bound: max(bound, 0), timeout: timeout, draw: rand.IntN, refuse: refuse, throttle: throttle}
	g.share = max(g.bound/accountShareOf, min(g.bound, minAccountShare), 1)
	for i := range g.classes {
		g.classes[i].groups = map[flowKey[A]]*waitGroup[A]{}
	}
	g.accounts = map[accountPlace[A]]int{}
	return g
}

// Entrant is a caller at a gate: its client address, the account it
// logs in to, and its class, or how to learn it.
type Entrant[A comparable] struct {
	Client netip.Addr
	// Account is zero for work of no account (an administrator's hash):
	// then no account share applies.
	Account A
	// Class is the caller's class when Classify is nil. Classify, when
	// set, learns it, with a Store read, say; it is called only when the
	// caller has to wait, so that a gate with room costs no more than it
	// did, and a name that does not exist is served as any other.
	Class    int
	Classify func() int
	// Weight is how many slots the caller holds while it runs: as many
	// as the threads its work runs on at once. Zero counts as one; more
	// than the gate's limit is held to the limit, so that it can run.
	Weight int
}

// accountPlace names the waiters of one account in one class.
type accountPlace[A comparable] struct {
	class   int
	account A
}

// waiter is one caller in the queue. Its fields but ready are guarded by
// the admission's mutex.
type waiter[A comparable] struct {
	ready chan struct{}
	group *waitGroup[A]
	class int
	elem  *list.Element
	// place is the waiter's account in its class, when counted is set:
	// work of no account is not.
	place   accountPlace[A]
	counted bool
	// weight is the slots the waiter is admitted with.
	weight int
	// grower is set for a waiter of Grow, in g.growers rather than in a
	// class's queue.
	grower bool
	// admitted is set when a slot was handed over; pushed when the waiter
	// lost its place to a newcomer.
	admitted, pushed bool
}

// waitGroup is the waiters of one client group, or of one known
// account, in one class, oldest first, and its place in its class's
// turn.
type waitGroup[A comparable] struct {
	key     flowKey[A]
	waiters list.List
	turn    *list.Element
}

// flowKey names a waitGroup: a client group's prefix, or in the known
// class an account.
type flowKey[A comparable] struct {
	prefix  netip.Prefix
	account A
}

// flowOf is the group a waiter of class and account from prefix waits
// in.
func flowOf[A comparable](class int, account A, prefix netip.Prefix) flowKey[A] {
	if class == ClassKnown && account != zero[A]() {
		return flowKey[A]{account: account}
	}
	return flowKey[A]{prefix: prefix}
}

// fairQueue is one class of waiters: the groups with waiters, in the
// order of their turns.
type fairQueue[A comparable] struct {
	groups map[flowKey[A]]*waitGroup[A]
	turns  list.List
}

// ClientGroup is the group a client shares its turns with: its IPv4 /24 or
// IPv6 /56. Requests that name no client share the zero prefix.
func ClientGroup(addr netip.Addr) netip.Prefix {
	switch {
	case !addr.IsValid():
		return netip.Prefix{}
	case addr.Is4():
		return netip.PrefixFrom(addr, 24).Masked()
	}
	return netip.PrefixFrom(addr, 56).Masked()
}

// Acquire admits the caller e with e.Weight slots, at once or after
// waiting. On success the caller must call Release with that weight, or
// with the weight Grow gave it. It fails with the gate's throttle error
// when the caller's account holds its share of a queue larger than the
// share, with the gate's refuse error when
// the caller is turned away, pushed out, or waits
// longer than the gate's timeout or ctx's deadline, and with ctx.Err()
// when ctx is cancelled.
func (g *Gate[A]) Acquire(ctx context.Context, e Entrant[A]) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n := g.weightOf(e.Weight)
	if g.waiting.Load() == 0 && g.take(n) {
		return nil
	}
	// Learnt outside the lock: the caller waits anyway.
	class := e.Class
	if e.Classify != nil && g.bound > 0 {
		class = e.Classify()
	}
	w := &waiter[A]{ready: make(chan struct{}, 1), class: class, weight: n}
	prefix := ClientGroup(e.Client)
	g.mu.Lock()
	// Counted as waiting before it looks for slots, so that a release
	// that frees them either sees it waiting or leaves them to it (see
	// Release). It looks only when nobody else waits: slots free while
	// others wait are the head's.
	if g.waiting.Add(1) == 1 && g.take(n) {
		g.waiting.Add(-1)
		g.mu.Unlock()
		return nil
	}
	if g.overShare(w.class, e.Account) {
		g.waiting.Add(-1)
		g.mu.Unlock()
		// The account's logins come too fast; only when its share is
		// the whole queue is the queue itself what is full.
		if g.share < g.bound {
			return g.throttle()
		}
		return g.refuse()
	}
	if !g.makeRoom(w, e.Account, prefix) {
		g.waiting.Add(-1)
		g.mu.Unlock()
		return g.refuse()
	}
	g.enqueue(w, e.Account, prefix)
	g.dispatch()
	g.mu.Unlock()
	return g.wait(ctx, w)
}

// Grow makes a caller that holds held slots hold weight instead (held to
// the limit, as Entrant.Weight is), once it learns that its work runs
// more threads than it acquired for: a password hash whose lanes it reads
// only once it holds a slot. With slots free and nobody waiting it takes
// them at once. Else it gives its slots back, so that two such callers
// never hold a slot each while each waits for the other's, and waits
// before every class, its turn having come already; it is neither
// refused for a full queue nor pushed out. It fails, as Acquire does,
// past the gate's timeout or ctx's deadline, or when ctx is cancelled;
// the caller then holds no slot and must not call Release.
func (g *Gate[A]) Grow(ctx context.Context, held, weight int) error {
	from, to := g.weightOf(held), g.weightOf(weight)
	if to <= from {
		return nil
	}
	g.mu.Lock()
	if g.waiting.Load() == 0 && g.take(to-from) {
		g.mu.Unlock()
		return nil
	}
	w := &waiter[A]{ready: make(chan struct{}, 1), weight: to, grower: true}
	// Counted as waiting before its slots are free, so that no caller
	// that finds nobody waiting takes them.
	g.waiting.Add(1)
	g.running.Add(-int64(from))
	w.elem = g.growers.PushBack(w)
	g.dispatch()
	g.mu.Unlock()
	return g.wait(ctx, w)
}

// wait waits for w's turn.
func (g *Gate[A]) wait(ctx context.Context, w *waiter[A]) error {
	timer := time.NewTimer(g.timeout)
	defer timer.Stop()
	var err error
	select {
	case <-w.ready:
	case <-timer.C:
		err = g.refuse()
	case <-ctx.Done():
		err = ctx.Err()
		if errors.Is(err, context.DeadlineExceeded) {
			err = g.refuse()
		}
	}
	g.mu.Lock()
	switch {
	case w.pushed:
		err = g.refuse()
	case w.admitted && err != nil:
		// The slots came with the timeout: they are the next waiter's.
		g.mu.Unlock()
		g.Release(w.weight)
		return err
	case !w.admitted:
		g.leave(w)
	}
	g.mu.Unlock()
	return err
}

// Limit is how many slots may be held at once.
func (g *Gate[A]) Limit() int { return g.limit }

// Bound is how many callers may wait beyond those that run.
func (g *Gate[A]) Bound() int { return g.bound }

// zero is the zero account: work of no account.
func zero[A comparable]() (z A) { return z }

// weightOf is the slots a caller of weight holds: at least one, at most
// the limit.
func (g *Gate[A]) weightOf(weight int) int { return min(max(weight, 1), g.limit) }

// take takes n free slots, if there are as many.
func (g *Gate[A]) take(n int) bool {
	for {
		r := g.running.Load()
		if r+int64(n) > int64(g.limit) {
			return false
		}
		if g.running.CompareAndSwap(r, r+int64(n)) {
			return true
		}
	}
}

// Release frees the slots of a caller that holds weight, as it was
// admitted with or grew to, and hands them to the waiters whose turn it
// is. With nobody waiting it takes no lock: it frees the slots, then
// looks again, and a caller that began to wait meanwhile, which counts
// itself waiting before it looks for free slots, has either taken them
// or is seen here and handed them.
func (g *Gate[A]) Release(weight int) {
	g.running.Add(-int64(g.weightOf(weight)))
	if g.waiting.Load() == 0 {
		return
	}
	g.mu.Lock()
	g.dispatch()
	g.mu.Unlock()
}

// dispatch hands the free slots to the waiters in their turns, each as
// many as its weight, until the one whose turn it is needs more than are
// free: it stays the head, and the slots freed from then on are kept for
// it.
func (g *Gate[A]) dispatch() {
	for g.running.Load() < int64(g.limit) {
		if g.head == nil {
			if g.head = g.next(); g.head == nil {
				return
			}
		}
		if !g.take(g.head.weight) {
			return
		}
		w := g.head
		g.head = nil
		g.waiting.Add(-1)
		w.admitted = true
		w.ready <- struct{}{}
	}
}

// next takes the waiter whose turn it is out of the queue; nil when none
// waits. A grower comes first, its turn having come before. Known clients
// take knownShare turns of every knownShare+1 while new ones wait too:
// room is kept for them without starving the first login of a new
// client, such as a host of a burst that has not yet got in. A name that
// does not exist waits until neither does.
func (g *Gate[A]) next() *waiter[A] {
	if front := g.growers.Front(); front != nil {
		g.growers.Remove(front)
		return front.Value.(*waiter[A])
	}
	g.turns++
	order := [numClasses]int{ClassKnown, ClassNew, ClassNobody}
	if g.turns%(knownShare+1) == 0 {
		order[0], order[1] = ClassNew, ClassKnown
	}
	for _, c := range order {
		if w := g.classes[c].next(); w != nil {
			g.unlinkAccount(w)
			return w
		}
	}
	return nil
}

func (g *Gate[A]) enqueue(w *waiter[A], account A, prefix netip.Prefix) {
	q := &g.classes[w.class]
	key := flowOf(w.class, account, prefix)
	grp := q.groups[key]
	if grp == nil {
		grp = &waitGroup[A]{key: key}
		grp.turn = q.turns.PushBack(grp)
		q.groups[key] = grp
	}
	w.group = grp
	w.elem = grp.waiters.PushBack(w)
	if account != zero[A]() {
		w.place, w.counted = accountPlace[A]{class: w.class, account: account}, true
		g.accounts[w.place]++
	}
}

// unlinkAccount uncounts w from its account's waiters, and forgets an
// account with none left, so that the map holds no more than the queue.
func (g *Gate[A]) unlinkAccount(w *waiter[A]) {
	if !w.counted {
		return
	}
	w.counted = false
	if n := g.accounts[w.place] - 1; n > 0 {
		g.accounts[w.place] = n
	} else {
		delete(g.accounts, w.place)
	}
}

func (g *Gate[A]) remove(w *waiter[A]) {
	g.classes[w.class].drop(w)
	g.unlinkAccount(w)
	g.waiting.Add(-1)
}

// leave takes w, which gave up before it was admitted, from where it
// waits. The head's slots, kept for it, go to the waiters after it.
func (g *Gate[A]) leave(w *waiter[A]) {
	switch {
	case w == g.head:
		g.head = nil
		g.waiting.Add(-1)
		g.dispatch()
	case w.grower:
		g.growers.Remove(w.elem)
		g.waiting.Add(-1)
	default:
		g.remove(w)
	}
}

// push takes w's place from it: w is answered overloaded.
func (g *Gate[A]) push(w *waiter[A]) {
	g.remove(w)
	w.pushed = true
	w.ready <- struct{}{}
}

// overShare reports whether account holds its whole share of class's
// places already. A caller that names no account has none.
func (g *Gate[A]) overShare(class int, account A) bool {
	return account != zero[A]() && g.accounts[accountPlace[A]{class: class, account: account}] >= g.share
}

// makeRoom makes a place in the queue for the newcomer w of account from
// group prefix, already counted as waiting and within its account's
// share, as [Gate] tells: within the queue's bound. It reports whether w
// may wait.
func (g *Gate[A]) makeRoom(w *waiter[A], account A, prefix netip.Prefix) bool {
	if g.waiting.Load() <= int64(g.bound) {
		return true
	}
	for c := numClasses - 1; c > w.class; c-- {
		if victim := g.classes[c].longestNewest(g.draw, flowKey[A]{}, false); victim != nil {
			g.push(victim)
			return true
		}
	}
	victim := g.classes[w.class].longestNewest(g.draw, flowOf(w.class, account, prefix), true)
	if victim == nil {
		return false
	}
	g.push(victim)
	return true
}

// longestNewest is the newest waiter of the longest group, a tie drawn at
// random; nil when none waits. With newcomer, the group key counts one
// more waiter, the newcomer, who is its newest: nil when it is drawn. It
// scans the groups: it runs only when the queue is full, and their number
// is at most the queue's bound.
func (q *fairQueue[A]) longestNewest(draw func(int) int, key flowKey[A], newcomer bool) *waiter[A] {
	var best *waitGroup[A]
	longest, ties := 0, 0
	own := newcomer
	consider := func(grp *waitGroup[A], n int) {
		switch {
		case n > longest:
			best, longest, ties = grp, n, 1
		case n == longest:
			ties++
			if draw(ties) == 0 {
				best = grp
			}
		}
	}
	for e := q.turns.Front(); e != nil; e = e.Next() {
		grp := e.Value.(*waitGroup[A])
		n := grp.waiters.Len()
		if newcomer && grp.key == key {
			n++
			own = false
		}
		consider(grp, n)
	}
	if own {
		// The newcomer's group has no waiter yet: it is a group of one.
		consider(nil, 1)
	}
	if best == nil || newcomer && best.key == key {
		return nil
	}
	return best.waiters.Back().Value.(*waiter[A])
}

// next takes the oldest waiter of the group whose turn it is, and moves
// that group to the end of the turns; nil when none waits.
func (q *fairQueue[A]) next() *waiter[A] {
	front := q.turns.Front()
	if front == nil {
		return nil
	}
	grp := front.Value.(*waitGroup[A])
	w := grp.waiters.Front().Value.(*waiter[A])
	q.drop(w)
	if grp.waiters.Len() > 0 {
		q.turns.MoveToBack(grp.turn)
	}
	return w
}

// drop takes w out of its group, and the group out of the turns once it
// is empty.
func (q *fairQueue[A]) drop(w *waiter[A]) {
	grp := w.group
	grp.waiters.Remove(w.elem)
	if grp.waiters.Len() == 0 {
		q.turns.Remove(grp.turn)
		delete(q.groups, grp.key)
	}
}

// Load returns how many slots are held and how many callers wait.
func (g *Gate[A]) Load() (running, waiting int) {
	return int(g.running.Load()), int(g.waiting.Load())
}
