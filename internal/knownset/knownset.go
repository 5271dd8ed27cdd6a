// Package knownset is a compact set of (account, client) pairs: which
// client addresses an account has logged in rightly from. It places a
// caller at a gate and grants nothing, so it keeps no names, only keyed
// 64-bit hashes of them, and a pair it has forgotten, or one that two
// hashes confuse, costs no more than a wait with the new.
//
// Its memory is bounded: at most MaxClients clients per account, the
// newest, and a number of accounts fixed at New. Each account costs about
// 40 bytes (an 8-byte key and four 4-byte client hashes in a Go map;
// TestBytesPerAccount measures it), so a million hosts take about 40 MB.
// Fill reads a listing of accounts, as a set is filled from a store.
package knownset

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// MaxClients is how many client addresses the set keeps per account; a
// fifth takes the place of the oldest. An account's own logins only ever
// move its own places, so churn through one account forgets no other.
const MaxClients = 4

// shards spreads the accounts over locks, so that logins of many hosts at
// once do not wait for one another.
const shards = 64

// Set is a set of (account, client) pairs, safe for concurrent use. The
// hashes are keyed with a seed drawn at random for each Set (hash/maphash,
// the hash Go's maps use against crafted collisions), so that a caller who
// does not know the seed cannot choose a made-up name that the set takes
// for a known one.
type Set struct {
	seed maphash.Seed
	// max bounds the accounts, size counts them.
	max    int64
	size   atomic.Int64
	shards [shards]shard
}

type shard struct {
	mu       sync.RWMutex
	accounts map[uint64]clients
}

// clients are the hashes of an account's clients, newest first; 0 is an
// empty place.
type clients [MaxClients]uint32

// New returns a set of at most maxAccounts accounts (give or take one per
// shard). Past the bound, an account added takes the place of one drawn
// from its shard, as Go's map order draws it.
func New(maxAccounts int) *Set {
	s := &Set{seed: maphash.MakeSeed(), max: int64(max(maxAccounts, 1))}
	for i := range s.shards {
		s.shards[i].accounts = map[uint64]clients{}
	}
	return s
}

// hashes are the keys of account and of client within it.
func (s *Set) hashes(account, client string) (key uint64, c uint32) {
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(account)
	key = h.Sum64()
	h.WriteByte(0)
	h.WriteString(client)
	c = uint32(h.Sum64())
	if c == 0 {
		c = 1
	}
	return key, c
}

// Add records that account logged in rightly from client.
func (s *Set) Add(account, client string) {
	key, c := s.hashes(account, client)
	sh := &s.shards[key%shards]
	sh.mu.RLock()
	cs, ok := sh.accounts[key]
	sh.mu.RUnlock()
	if ok && cs[0] == c {
		return // the common case: a host logs in again from where it did
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	cs, ok = sh.accounts[key]
	if !ok && s.size.Load() >= s.max && len(sh.accounts) > 0 {
		for k := range sh.accounts {
			delete(sh.accounts, k)
			s.size.Add(-1)
			break
		}
	}
	if !ok {
		s.size.Add(1)
	}
	// Move c to the front, dropping the oldest when it is new.
	last := MaxClients - 1
	for i, x := range cs {
		if x == c {
			last = i
			break
		}
	}
	copy(cs[1:last+1], cs[:last])
	cs[0] = c
	sh.accounts[key] = cs
}

// Has reports whether account logged in rightly from client, as far as
// the set remembers.
func (s *Set) Has(account, client string) bool {
	key, c := s.hashes(account, client)
	sh := &s.shards[key%shards]
	sh.mu.RLock()
	cs, ok := sh.accounts[key]
	sh.mu.RUnlock()
	if !ok {
		return false
	}
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

// Len is how many accounts the set holds.
func (s *Set) Len() int { return int(s.size.Load()) }
