// Package standing holds what nmauth's bearer check last read of an
// account's standing, and until when it may trust it: one slot per
// account, read without a lock, whose entry lives a random time between
// half a TTL and the TTL, so that accounts first read together are not
// all read again together; a fixed table of epochs, which a change to an
// account bumps so that a read that began before the change keeps
// nothing; and a cache bounded in entries that holds each account's
// place. It knows nothing of the Store; its caller makes each account's
// place and loads what goes in its slot; [Status] puts the pieces
// together.
package standing

import (
	"hash/maphash"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// numEpochs is the number of epoch counters of a table, a power of two.
const numEpochs = 1 << 12

// Epochs is a table of epoch counters. Accounts share its counters by
// the hash of their name, so its memory is bounded; a bump for one
// account therefore also makes the others on its counter read once more,
// which costs a read and never correctness.
type Epochs struct {
	seed     maphash.Seed
	counters [numEpochs]atomic.Uint64
}

// NewEpochs returns a table under a seed of its own.
func NewEpochs() *Epochs { return &Epochs{seed: maphash.MakeSeed()} }

// Of returns the epoch counter of the account named name.
func (e *Epochs) Of(name string) *atomic.Uint64 {
	return &e.counters[maphash.String(e.seed, name)&(numEpochs-1)]
}

// Slot holds one account's standing as last read. The zero Slot holds
// nothing.
type Slot[V any] struct {
	cur atomic.Pointer[Entry[V]]
}

// Entry is one account's standing as a slot holds it.
type Entry[V any] struct {
	V V
	// Fetched and Until bound the time, by the caller's clock, in which
	// V is trusted.
	Fetched, Until time.Time
	// Epoch is the account's epoch when the read that made V began.
	Epoch uint64
}

// Load returns the entry the slot holds, nil for none. The caller trusts
// it from Fetched until Until while its account's epoch is still Epoch
// (the check is the caller's, on the path of every bearer check), and
// must not change it.
func (s *Slot[V]) Load() *Entry[V] { return s.cur.Load() }

// Set keeps v, read at now by a read that began at epoch, for a random
// time between half of ttl and ttl, and returns the standing it keeps.
func (s *Slot[V]) Set(v V, epoch uint64, now time.Time, ttl time.Duration) *V {
	e := &Entry[V]{V: v, Fetched: now, Until: now.Add(lifetime(ttl)), Epoch: epoch}
	s.cur.Store(e)
	return &e.V
}

// lifetime is a random time between half of ttl and ttl.
func lifetime(ttl time.Duration) time.Duration {
	half := ttl / 2
	return ttl - rand.N(half+1)
}
