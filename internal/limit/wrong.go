package limit

import (
	"net/netip"
	"time"
)

// While wrong credentials may have put some address past its limit, a
// right credential from such an address is refused alike, so that past
// its limit a client cannot tell a right guess from a wrong one. A
// limiter notes how long that may last, so that while no wrong
// credential came lately a right one costs one atomic load.

// NoteWrong notes that the attempt Take counted at now, which it
// answered with wait, was a wrong credential. It moves on to when the
// address, at the latest, is no longer past its limit: a bucket's tat
// runs at most a burst ahead, so an interval after an allowed attempt,
// and an interval after the wait of a refused one.
func (l *Limiter) NoteWrong(now time.Time, wait time.Duration) {
	until := now.UnixNano() + int64(wait) + l.interval
	for {
		cur := l.wrongUntil.Load()
		if cur >= until || l.wrongUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// WrongSeen reports whether an address may be past its limit by wrong
// credentials: one atomic load, false but for a while after one. A nil
// Limiter, a limit that is off, has seen none.
func (l *Limiter) WrongSeen() bool { return l != nil && l.wrongUntil.Load() != 0 }

// Throttled returns how long addr must wait at now before its next
// attempt, without counting one, while wrong credentials may have put it
// past its limit; once that time has passed it notes so and returns
// zero. A nil Limiter returns zero.
func (l *Limiter) Throttled(addr netip.Addr, now time.Time) time.Duration {
	if l == nil {
		return 0
	}
	if until := l.wrongUntil.Load(); now.UnixNano() >= until {
		l.wrongUntil.CompareAndSwap(until, 0)
		return 0
	}
	return l.Wait(addr, now)
}
