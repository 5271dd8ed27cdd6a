package nmauth

import (
	"context"
	"slices"
	"time"

	"github.com/nmauth/nmauth/internal/guard"
	"github.com/nmauth/nmauth/internal/hashfmt"
	"github.com/nmauth/nmauth/internal/state"
)

// HostLoginStore is implemented by a [Store] that reads what a host login
// needs more cheaply than [Store.GetHost] does; [SQLStore] does. A host
// login reads through it when the Store has it, else through GetHost.
type HostLoginStore interface {
	// GetHostLogin returns the host's record as GetHost does, with only
	// what a login reads: ID, MACAddress, PasswordHash, Disabled and
	// State. CreatedAt and Broken are left zero; a record it cannot
	// decode returns a [*BrokenRecordError], as GetHost's does.
	GetHostLogin(ctx context.Context, id string) (Host, error)
}

// getHostLogin reads a host for its login: through [HostLoginStore] when
// the Store has it, else through GetHost, under the guard's deadline.
func (s *guardedStore) getHostLogin(ctx context.Context, id string) (Host, error) {
	lean, ok := s.Store.(HostLoginStore)
	if !ok {
		return s.GetHost(ctx, id)
	}
	return guard.Result(s.g, ctx, "get host", func(ctx context.Context) (Host, error) { return lean.GetHostLogin(ctx, id) }, contractError)
}

// hostCredential is what a host login keeps of a host whose login it
// granted from a Store read with nothing to write, or with a queued write,
// as that write leaves the host (see seedHost): the parsed digest of its
// machine secret and what the grant reads. The host's next login from one
// of clients, with a secret the digest checks, is granted from it without
// reading the Store while it is trusted: for StatusCacheTTL from the start
// of that read (by Config.Now), and while the host's epoch in the status
// cache is the one read before it, so a change made through this
// Authenticator (a disable, a new secret, a deletion, a revocation) drops
// it at once, and one made elsewhere within StatusCacheTTL, as the bearer
// check sees it. Its token carries the generation read, which a
// revocation since refuses.
//
// Any other login reads the Store as if it were not there. A failure
// counted through this Authenticator replaces it with an entry that never
// answers, so the failure's backoff applies at once; so does a Store read
// that finds something to write, a host no longer there, and a queued
// write that does not apply as its login read the host or that the Store
// does not take. It lives in the host's place in the status cache, so its
// number is bounded by StatusCacheSize; see BENCHMARKS.md for its memory.
type hostCredential struct {
	key *ringKey
	mac [32]byte
	// macAddress and generation are the host's, as read.
	macAddress string
	generation uint64
	// clients are the addresses known to the host without failures.
	clients []string
	// fetched and until bound the time, in Unix nanoseconds by
	// Config.Now, in which the entry is trusted.
	fetched, until int64
	epoch          uint64
}

// cachedHost returns the host's credential for client if the cache holds
// one it may trust at now, else nil.
func (a *Authenticator) cachedHost(id, client string, now time.Time) *hostCredential {
	r := a.status.Peek(accountKey{kind: KindHost, name: id})
	if r == nil {
		return nil
	}
	e := r.Login.Load()
	if t := now.UnixNano(); e == nil || e.key == nil || e.epoch != r.Epoch.Load() || t < e.fetched || t >= e.until ||
		!slices.Contains(e.clients, client) {
		return nil
	}
	return e
}

// credential is the host's digest as its check reads it, identified when
// e was made.
func (e *hostCredential) credential() credential {
	return credential{found: true, format: hashfmt.MachineDigest, key: e.key, mac: e.mac}
}

// account returns the host's record as the login of client reads it from
// e: a known client without failures and the host's MAC address and
// generation. It has no stored credential: the grant that reads it writes
// nothing.
func (e *hostCredential) account(id, client string) account {
	h := &Host{ID: id, MACAddress: e.macAddress}
	h.State.v.Generation = e.generation
	h.State.v.PasswordClients = []state.Client{{Client: client, Known: true}}
	return hostAccount(h)
}

// hostCacheState is what a host login saw of the host's cache entry
// before it read the Store: its epoch and its place with the entry in it.
type hostCacheState struct {
	ref   *accountRef[accountStatus]
	prev  *hostCredential
	epoch uint64
	at    time.Time
	on    bool
}

// hostCacheBefore is taken before a host login reads the Store.
func (a *Authenticator) hostCacheBefore(id string) hostCacheState {
	c := a.status
	if !c.On() {
		return hostCacheState{}
	}
	k := accountKey{kind: KindHost, name: id}
	st := hostCacheState{epoch: c.Epoch(k).Load(), at: a.now(), on: true}
	if st.ref = c.Peek(k); st.ref != nil {
		st.prev = st.ref.Login.Load()
	}
	return st
}

// keepHost caches acc, the host's record read after st was taken, for
// the login of a right secret, the first root secret's, that was granted
// from it with nothing to write. It keeps nothing when the
// entry changed since st: a failure counted meanwhile wins.
func (a *Authenticator) keepHost(st hostCacheState, id string, acc account) {
	if !st.on {
		return
	}
	if e := a.hostEntry(st, acc); e != nil {
		a.putHost(st, id, e)
	}
}

// seedHost caches the host as w, the write that a right login queues
// from acc (read after st was taken), leaves it once applied, so that the
// host's next logins from that client are granted from the cache while
// the write waits for its batch. A write that does not apply as read, or
// that the Store does not take, drops the entry (see hostWriter.lost).
// It reports whether it cached the host; like keepHost, it keeps nothing
// when the entry changed since st or the credential is not one the cache
// keeps.
func (a *Authenticator) seedHost(st hostCacheState, id string, acc account, w *hostWrite) bool {
	if !st.on || acc.host == nil {
		return false
	}
	h := *acc.host
	h.State.v.PasswordClients = slices.Clone(*acc.clients)
	if _, err := w.applyTo(&h); err != nil {
		return false
	}
	e := a.hostEntry(st, hostAccount(&h))
	return e != nil && a.putHost(st, id, e)
}

// hostEntry returns the cache entry of acc, the host's record read after
// st was taken, or nil when its credential is not a digest under the
// first root secret.
func (a *Authenticator) hostEntry(st hostCacheState, acc account) *hostCredential {
	k, mac, err := a.ring.ParseMachineDigest(*acc.hash)
	if err != nil || k != a.ring.Signer() || len(mac) != 32 {
		return nil
	}
	e := &hostCredential{key: k, macAddress: acc.host.MACAddress, generation: acc.host.State.v.Generation,
		fetched: st.at.UnixNano(), until: st.at.Add(a.status.TTL).UnixNano(), epoch: st.epoch}
	copy(e.mac[:], mac)
	for _, c := range *acc.clients {
		if c == (state.Client{Client: c.Client, Known: true}) {
			e.clients = append(e.clients, c.Client)
		}
	}
	return e
}

// putHost puts e in the host's place if the entry there is still the one
// st saw, and reports whether it did.
func (a *Authenticator) putHost(st hostCacheState, id string, e *hostCredential) bool {
	r := a.status.Ref(&accountKey{kind: KindHost, name: id})
	prev := st.prev
	if r != st.ref {
		prev = nil
	}
	return r.Login.CompareAndSwap(prev, e)
}

// dropHost replaces the host's cache entry with one that never answers,
// so that its logins read the Store, and so that a read made before this
// call keeps nothing (see keepHost). create makes the host's place when
// the cache holds none, as after a failure counted.
func (a *Authenticator) dropHost(id string, create bool) {
	if !a.status.On() {
		return
	}
	k := accountKey{kind: KindHost, name: id}
	r := a.status.Peek(k)
	switch {
	case r == nil && !create:
		return
	case r == nil:
		r = a.status.Ref(&k)
	case r.Login.Load() == nil && !create:
		return
	}
	r.Login.Store(new(hostCredential))
}
