package sso

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"time"
)

// A client group (an IPv4 /24 or IPv6 /56, as nmauth's login gates group
// clients: [nmauth.Extension.ClientGroup]) holds at most a share of the
// pending logins and of a replica's headless websockets, and less as they
// fill: a group that holds held of total places, used of them taken in
// all, may take another only while used < total × (1 − held/share). So a
// group's first place is free until every place is taken, a group alone
// reaches its share, and a flood must come from thousands of groups to
// take the last places: with 10,000 pending logins and a share of 100,
// 510 /24s with as many logins each as they like hold about 8,400 (16
// each), and taking all 10,000 needs about 1,800 groups (910 holding 10
// each stop at 9,100, then 900 that hold none take one each); in general
// about 2 × total / √share. A group past its share is refused with 429.
// Once every place is taken, a group that holds nothing takes the place
// of the oldest of the group that holds the most (the Store does it for
// pending logins, [sockets.take] for websockets): a pending login is
// refused (503) only when no group holds two, and a websocket never.
func roomFor(used, held, total, share int) bool {
	return held < share && int64(used)*int64(share) < int64(total)*int64(share-held)
}

// groupKey is how the Store names a client group: "" for a request that
// names no client.
func groupKey(g netip.Prefix) string {
	if !g.IsValid() {
		return ""
	}
	return g.String()
}

// ErrGroupShare is a login begun by a client group that holds its share
// of the pending logins (see [Config.MaxPendingPerGroup]), or of the
// headless websockets ([Config.MaxHeadlessPerGroup]): 429 with
// Retry-After, while other groups still begin logins.
var ErrGroupShare = errors.New("sso: this client group holds its share of the logins under way")

// errPushedOut ends a headless login whose websocket a login of a group
// holding none took, when every websocket was held.
var errPushedOut = errors.New("sso: too many terminal logins were waiting; this one made room for a newer one: start again")

// sockets are the headless websockets of a replica, by client group.
type sockets struct {
	mu     sync.Mutex
	total  int // MaxHeadless
	share  int // MaxHeadlessPerGroup
	n      int
	groups map[netip.Prefix][]*socket // each group's, oldest first
}

// socket is one headless websocket's place; pushed is closed when a
// newer login took it.
type socket struct {
	group  netip.Prefix
	since  time.Time
	pushed chan struct{}
}

// take gives group a place. A group within its room (see [roomFor]) gets
// one; a group that holds none, when every place is taken, gets the place
// of the oldest websocket of the group that holds the most, which is told
// through its pushed channel, so that a flood from many groups cannot
// keep a newcomer out, only make the oldest waiters start again. A group
// past its room gets [ErrGroupShare].
func (s *sockets) take(group netip.Prefix) (*socket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	held := len(s.groups[group])
	if !roomFor(s.n, held, s.total, s.share) {
		if held > 0 || !s.pushOut() {
			return nil, ErrGroupShare
		}
	}
	sk := &socket{group: group, since: time.Now(), pushed: make(chan struct{})}
	if s.groups == nil {
		s.groups = map[netip.Prefix][]*socket{}
	}
	s.groups[group] = append(s.groups[group], sk)
	s.n++
	return sk, nil
}

// pushOut frees the place of the oldest websocket of the largest group
// (of the largest, the one that has waited longest), with s.mu held; false
// when there is none.
func (s *sockets) pushOut() bool {
	var victim []*socket
	for _, g := range s.groups {
		if len(g) > len(victim) || len(g) == len(victim) && g[0].since.Before(victim[0].since) {
			victim = g
		}
	}
	if len(victim) == 0 {
		return false
	}
	sk := victim[0]
	s.drop(sk)
	close(sk.pushed)
	return true
}

// release frees sk's place, unless a newer login took it already.
func (s *sockets) release(sk *socket) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-sk.pushed:
	default:
		s.drop(sk)
	}
}

// drop removes sk, with s.mu held.
func (s *sockets) drop(sk *socket) {
	g := s.groups[sk.group]
	for i, x := range g {
		if x == sk {
			g = append(g[:i:i], g[i+1:]...)
			break
		}
	}
	if len(g) == 0 {
		delete(s.groups, sk.group)
	} else {
		s.groups[sk.group] = g
	}
	s.n--
}

// groupOf is the client group of a request's context.
func (s *SSO) groupOf(ctx context.Context) netip.Prefix {
	return s.cfg.Extension.ClientGroup(ctx)
}
