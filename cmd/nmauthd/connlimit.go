package main

import (
	"container/heap"
	clist "container/list"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nmauth/nmauth"
)

// The connection caps' defaults.
const (
	// maxConnsCeiling bounds the total cap nmauthd sets itself: a
	// connection costs some 10 to 20 KiB of memory while it waits, and a
	// file limit of a million, as containers often have, must not let a
	// flood hold gigabytes.
	maxConnsCeiling = 16384
	// fdReserve is the files kept for other than client connections: the
	// store's pool (poolSize connections; one to SQLite holds its
	// database, journal and shared-memory files), the listeners, the
	// metrics server's connections, the OpenID provider's, the standard
	// streams and the runtime's own.
	fdReserve = 128
	// defaultMaxConnsPerGroup lets one client group (an office behind one
	// address, a data center's /24) hold many connections, and no group
	// more than a sixteenth of the default total.
	defaultMaxConnsPerGroup = 1024
)

// connCaps returns the total and per-group caps of --max-conns and
// --max-conns-per-group under the file limit fdLimit (0 when unknown).
// The total is below the file limit by fdReserve, so that a flood of
// connections never leaves nmauthd without a file for its store or for
// the accept that lets it close a connection to make room; 0 chooses the
// most that allows, at most maxConnsCeiling.
func connCaps(maxConns, perGroup int, fdLimit uint64) (total, group int, err error) {
	room := uint64(maxConnsCeiling)
	if fdLimit > 0 {
		if fdLimit <= fdReserve {
			return 0, 0, fmt.Errorf("the file limit (%d open files) leaves no room for connections beside the %d nmauthd keeps "+
				"for its store and listeners; raise it (ulimit -n, LimitNOFILE=)", fdLimit, fdReserve)
		}
		room = fdLimit - fdReserve
	}
	switch {
	case maxConns < 0:
		return 0, 0, fmt.Errorf("--max-conns %d: must be at least 1, or 0 for the most the file limit allows", maxConns)
	case maxConns == 0:
		total = int(min(room, maxConnsCeiling))
	case fdLimit > 0 && uint64(maxConns) > room:
		return 0, 0, fmt.Errorf("--max-conns %d is more than the file limit allows (%d open files, less %d kept for the store "+
			"and listeners: %d); raise the limit (ulimit -n, LimitNOFILE=) or lower --max-conns", maxConns, fdLimit, fdReserve, room)
	default:
		total = maxConns
	}
	if perGroup < 1 {
		return 0, 0, fmt.Errorf("--max-conns-per-group %d: must be at least 1", perGroup)
	}
	return total, min(perGroup, total), nil
}

// connTable holds the connections nmauthd has open and caps them, in total
// and per client group, as HAProxy's maxconn and nginx's limit_conn do. A
// connection is silent from its accept until the server has read a whole
// request header from it, busy while the server serves a request, and idle
// between requests (http.ConnState's New, Active and Idle). When a new
// connection would pass a cap, the table makes room by closing the oldest
// silent connection, or else the oldest idle one, of the newcomer's own
// group (at the group's cap) or of the group that holds the most of them
// (at the total cap), so that a flood of connections that send nothing
// pushes out its own, never a client that sends its request at once from
// another group. Only when no connection it may close is left is the
// newcomer refused. A busy connection is never closed here: its request is
// bounded by the server's timeouts.
type connTable struct {
	total, perGroup int

	mu     sync.Mutex
	open   int
	seq    uint64 // orders the connections of a class, oldest first
	conns  map[net.Conn]*connEntry
	groups map[netip.Prefix]*connGroup
	// ranks holds, for silent and idle connections, the groups that have
	// some, the group with the most first.
	ranks [classes]groupRank

	// evicted and refused count the connections closed to make room and
	// the newcomers refused, for the log.
	evicted, refused atomic.Uint64
}

// connClass is what a connection is doing, for eviction.
type connClass int

const (
	silent  connClass = iota // no whole request header yet
	idle                     // between requests (keep-alive)
	classes                  // the classes that may be closed
	busy    = classes        // serving a request
)

type connEntry struct {
	conn  net.Conn
	group *connGroup
	class connClass
	seq   uint64         // when it entered its class
	elem  *clist.Element // its place in group.lists[class], unless busy
}

// connGroup is the connections of one client group.
type connGroup struct {
	prefix netip.Prefix
	open   int
	lists  [classes]clist.List // *connEntry, oldest first
	rank   [classes]int        // index in connTable.ranks, -1 when absent
}

func newConnTable(total, perGroup int) *connTable {
	t := &connTable{
		total: total, perGroup: perGroup,
		conns:  make(map[net.Conn]*connEntry),
		groups: make(map[netip.Prefix]*connGroup),
	}
	for k := range t.ranks {
		t.ranks[k].class = connClass(k)
	}
	return t
}

// admit counts c, a new connection of group, as silent if a place is
// free or can be made; capped says whether the group's cap applies. It
// returns the connection to close to make that place, if any, and whether
// c was admitted. The caller closes both outside the table's lock.
func (t *connTable) admit(c net.Conn, prefix netip.Prefix, capped bool) (victim net.Conn, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.groups[prefix]
	switch {
	case capped && g != nil && g.open >= t.perGroup:
		victim = t.oldest(g)
	case t.open >= t.total:
		for k := range t.ranks {
			if r := &t.ranks[k]; len(r.groups) > 0 {
				victim = t.oldestOf(r.groups[0], connClass(k))
				break
			}
		}
	default:
		t.add(c, prefix)
		return nil, true
	}
	if victim == nil {
		t.refused.Add(1)
		return nil, false
	}
	t.evicted.Add(1)
	t.remove(t.conns[victim])
	t.add(c, prefix)
	return victim, true
}

// oldest is g's oldest silent connection, or else its oldest idle one, or
// nil.
func (t *connTable) oldest(g *connGroup) net.Conn {
	for k := range g.lists {
		if c := t.oldestOf(g, connClass(k)); c != nil {
			return c
		}
	}
	return nil
}

func (t *connTable) oldestOf(g *connGroup, k connClass) net.Conn {
	if e := g.lists[k].Front(); e != nil {
		return e.Value.(*connEntry).conn
	}
	return nil
}

func (t *connTable) add(c net.Conn, prefix netip.Prefix) {
	g := t.groups[prefix]
	if g == nil {
		g = &connGroup{prefix: prefix, rank: [classes]int{-1, -1}}
		t.groups[prefix] = g
	}
	e := &connEntry{conn: c, group: g, class: busy}
	t.conns[c] = e
	g.open++
	t.open++
	t.enter(e, silent)
}

// enter moves e to class k, as the newest of its group's there.
func (t *connTable) enter(e *connEntry, k connClass) {
	g := e.group
	if e.class != busy {
		g.lists[e.class].Remove(e.elem)
		t.ranks[e.class].changed(g)
	}
	e.class, e.elem = k, nil
	if k == busy {
		return
	}
	t.seq++
	e.seq = t.seq
	e.elem = g.lists[k].PushBack(e)
	t.ranks[k].changed(g)
}

func (t *connTable) remove(e *connEntry) {
	t.enter(e, busy)
	delete(t.conns, e.conn)
	e.group.open--
	t.open--
	if e.group.open == 0 {
		delete(t.groups, e.group.prefix)
	}
}

// track follows the server's view of each connection; it is the HTTP
// server's ConnState hook. A connection the table closed, or never
// admitted, is ignored.
func (t *connTable) track(c net.Conn, s http.ConnState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.conns[c]
	if e == nil {
		return
	}
	switch s {
	case http.StateActive:
		t.enter(e, busy)
	case http.StateIdle:
		t.enter(e, idle)
	case http.StateClosed, http.StateHijacked:
		t.remove(e)
	}
}

// counts returns the open connections in total and of prefix's group.
func (t *connTable) counts(prefix netip.Prefix) (total, group int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if g := t.groups[prefix]; g != nil {
		group = g.open
	}
	return t.open, group
}

// groupRank is a heap of the groups that have connections of one class:
// the group with the most of them first, and of groups with as many the
// one whose oldest is oldest, so that the largest group pays first and,
// of groups of one connection each, the one that has waited longest.
type groupRank struct {
	class  connClass
	groups []*connGroup
}

// changed puts g where its connections of the class now place it.
func (r *groupRank) changed(g *connGroup) {
	i, n := g.rank[r.class], g.lists[r.class].Len()
	switch {
	case i < 0 && n > 0:
		heap.Push(r, g)
	case i >= 0 && n == 0:
		heap.Remove(r, i)
	case i >= 0:
		heap.Fix(r, i)
	}
}

func (r *groupRank) Len() int { return len(r.groups) }

func (r *groupRank) Less(i, j int) bool {
	a, b := &r.groups[i].lists[r.class], &r.groups[j].lists[r.class]
	if a.Len() != b.Len() {
		return a.Len() > b.Len()
	}
	return a.Front().Value.(*connEntry).seq < b.Front().Value.(*connEntry).seq
}

func (r *groupRank) Swap(i, j int) {
	r.groups[i], r.groups[j] = r.groups[j], r.groups[i]
	r.groups[i].rank[r.class], r.groups[j].rank[r.class] = i, j
}

func (r *groupRank) Push(x any) {
	g := x.(*connGroup)
	g.rank[r.class] = len(r.groups)
	r.groups = append(r.groups, g)
}

func (r *groupRank) Pop() any {
	g := r.groups[len(r.groups)-1]
	r.groups[len(r.groups)-1] = nil
	r.groups = r.groups[:len(r.groups)-1]
	g.rank[r.class] = -1
	return g
}

// capListener admits the connections its listener accepts through a
// connTable, by the client group of the TCP peer (the library's grouping,
// an IPv4 /24 or IPv6 /56). A peer in trusted (the reverse proxies) carries
// the connections of many clients, so it is held to the total alone.
type capListener struct {
	net.Listener
	table   *connTable
	trusted []netip.Prefix
	log     *slog.Logger
	logged  atomic.Int64 // unix seconds of the last warning
}

// groups is the grouping of the library's login gates; an Extension's
// ClientGroup needs no registration.
var groups nmauth.Extension

// peerGroup is the client group of a connection's TCP peer, and whether
// the peer is a trusted proxy.
func peerGroup(c net.Conn, trusted []netip.Prefix) (netip.Prefix, bool) {
	var addr netip.Addr
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		addr = ta.AddrPort().Addr().Unmap()
	}
	proxy := slices.ContainsFunc(trusted, func(p netip.Prefix) bool { return p.Contains(addr) })
	return groups.ClientGroup(nmauth.WithClientAddr(context.Background(), addr)), proxy
}

// Accept returns the next connection the table admits, closing those it
// closes to make room and those it refuses.
func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		prefix, proxy := peerGroup(c, l.trusted)
		victim, ok := l.table.admit(c, prefix, !proxy)
		if victim != nil {
			victim.Close()
		}
		if victim != nil || !ok {
			l.warn()
		}
		if ok {
			return c, nil
		}
		c.Close()
	}
}

// warn logs, at most once a minute, that the caps are reached, with the
// connections closed and refused so far.
func (l *capListener) warn() {
	now := time.Now().Unix()
	last := l.logged.Load()
	if now-last < 60 || !l.logged.CompareAndSwap(last, now) {
		return
	}
	l.log.Warn("connection cap reached: closing connections that have sent no request, then idle ones",
		"max_conns", l.table.total, "max_conns_per_group", l.table.perGroup,
		"closed", l.table.evicted.Load(), "refused", l.table.refused.Load())
}
