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

// Gate admits work by concurrency: at most limit callers run at
// once, and up to bound more wait, each at most timeout, in a queue that
// is shared fairly rather than first come, first served (DESIGN.md,
// "Overload and fairness"):
//
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
// Retry-After over HTTP). The queue's memory is bounded by bound; a
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
	// running and waiting change under mu; they are atomic so that
	// Load may read them without it.
	running, waiting atomic.Int64
	classes          [numClasses]fairQueue[A]
	// accounts counts the waiters of each account in each class.
	accounts map[accountPlace[A]]int
	// turns counts the slots handed over, for handOver's shares.
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

// New returns a gate admitting limit callers at once with bound more
// waiting up to timeout each; refuse makes the error of a caller it does
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

// Acquire admits the caller e, at once or after waiting. On success the
// caller must call Release. It fails with the gate's throttle error
// when the caller's account holds its share of a queue larger than the
// share, with the gate's refuse error when
// the caller is turned away, pushed out, or waits
// longer than the gate's timeout or ctx's deadline, and with ctx.Err()
// when ctx is cancelled.
func (g *Gate[A]) Acquire(ctx context.Context, e Entrant[A]) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if g.waiting.Load() == 0 && g.take() {
		return nil
	}
	// Learnt outside the lock: the caller waits anyway.
	class := e.Class
	if e.Classify != nil && g.bound > 0 {
		class = e.Classify()
	}
	w := &waiter[A]{ready: make(chan struct{}, 1), class: class}
	prefix := ClientGroup(e.Client)
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
		// The slot came with the timeout: it is the next waiter's.
		g.mu.Unlock()
		g.Release()
		return err
	case !w.admitted:
		g.remove(w)
	}
	g.mu.Unlock()
	return err
}

// Limit is how many callers run at once.
func (g *Gate[A]) Limit() int { return g.limit }

// Bound is how many callers may wait beyond those that run.
func (g *Gate[A]) Bound() int { return g.bound }

// zero is the zero account: work of no account.
func zero[A comparable]() (z A) { return z }

// take takes a free slot, if there is one.
func (g *Gate[A]) take() bool {
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

// Release hands the caller's slot to the next waiter, or frees it. With
// nobody waiting it takes no lock: it frees the slot, then looks again,
// and a caller that began to wait meanwhile, which counts itself waiting
// before it looks for a free slot, has either taken the slot or is seen
// here and handed one.
func (g *Gate[A]) Release() {
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
// every knownShare+1 while new ones wait too: room is kept for them
// without starving the first login of a new client, such as a host of a
// burst that has not yet got in. A name that does not exist waits until
// neither does.
func (g *Gate[A]) handOver() bool {
	g.turns++
	order := [numClasses]int{ClassKnown, ClassNew, ClassNobody}
	if g.turns%(knownShare+1) == 0 {
		order[0], order[1] = ClassNew, ClassKnown
	}
	for _, c := range order {
		if w := g.classes[c].next(); w != nil {
			g.unlinkAccount(w)
			g.waiting.Add(-1)
			w.admitted = true
			w.ready <- struct{}{}
			return true
		}
	}
	return false
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

// Load returns how many callers run and how many wait.
func (g *Gate[A]) Load() (running, waiting int) {
	return int(g.running.Load()), int(g.waiting.Load())
}
