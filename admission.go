package nmauth

import (
	"context"
	"net/netip"
	"time"

	"github.com/nmauth/nmauth/internal/clientaddr"
	"github.com/nmauth/nmauth/internal/gate"
)

// admission is the fair admission gate of internal/gate, counting the
// accounts of logins: the hashing gate and the host gate are each one
// (DESIGN.md, "Overload and fairness"). A caller it does not admit gets
// a [*RetryError] for [ErrOverloaded]: 503 with Retry-After over HTTP; one
// whose account holds its share, for [ErrThrottled]: 429.
type admission = gate.Gate[accountKey]

// entrant is a caller at a gate: its client address, the account it logs
// in to, and its class, or how to learn it.
type entrant = gate.Entrant[accountKey]

// The classes of the callers that wait at a gate (see internal/gate).
const (
	classKnown  = gate.ClassKnown
	classNew    = gate.ClassNew
	classNobody = gate.ClassNobody
)

// newAdmission returns a gate admitting limit callers at once with bound
// more waiting up to timeout each.
func newAdmission(limit, bound int, timeout time.Duration) *admission {
	return gate.New[accountKey](limit, bound, timeout, overloaded, accountThrottled)
}

// defaultQueueTimeout is how long a caller waits at a gate by default
// ([Config.QueueTimeout]): long enough for a burst of ten thousand hosts
// to be served, short enough for a client to retry.
const defaultQueueTimeout = 10 * time.Second

// overloaded is the error of a caller the gate did not admit.
func overloaded() error {
	return &RetryError{Reason: ErrOverloaded, RetryAfter: overloadRetryAfter}
}

// accountThrottled is the error of a caller whose account holds its share
// of a gate's queue: 429, as the account's logins come too fast, the
// server is not overloaded.
func accountThrottled() error {
	return &RetryError{Reason: ErrThrottled, RetryAfter: overloadRetryAfter}
}

// ClientGroup is the client group of a request, as the login gates share
// their turns: the IPv4 /24 or IPv6 /56 of the client address that
// [Authenticator.Limit] or [WithClientAddr] named in ctx; the zero Prefix
// when ctx names none. An extension that bounds what each client may hold
// of something scarce (the pending logins of single sign-on, its
// websockets) shares it by this group, so that a client cannot escape its
// share by moving to a neighbouring address, nor the extension's grouping
// drift from the gates'. It needs no registration.
func (e *Extension) ClientGroup(ctx context.Context) netip.Prefix {
	return gate.ClientGroup(clientaddr.Counted(ctx))
}
