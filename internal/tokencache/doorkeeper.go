package tokencache

import "sync/atomic"

// doorkeeper is a Bloom filter of the token keys seen lately: it answers
// whether a key was added since it last cleared itself, which it does
// after as many additions as the cache has room for. It may answer yes
// for a key never added (about once in 200 when full, at worst), which
// costs a cache entry; and no for one added before it cleared, which costs
// one more parse. It never decides whether a token is accepted.
type doorkeeper struct {
	bits  []atomic.Uint64
	mask  uint64
	limit int64
	added atomic.Int64
}

// doorkeeperHashes is how many bits a key sets; it spends at least 16
// bits per key.
const doorkeeperHashes = 3

// newDoorkeeper returns a doorkeeper for a cache of size tokens.
func newDoorkeeper(size int) *doorkeeper {
	nbits := uint64(64)
	for nbits < 16*uint64(size) {
		nbits <<= 1
	}
	return &doorkeeper{bits: make([]atomic.Uint64, nbits/64), mask: nbits - 1, limit: int64(size)}
}

// admit reports whether key was added since the doorkeeper last cleared,
// and adds it. The key is a seeded hash; its two halves make the probes
// (double hashing).
func (k *doorkeeper) admit(key uint64) bool {
	seen := true
	step := key>>32 | 1
	for i := range uint64(doorkeeperHashes) {
		bit := (key + i*step) & k.mask
		w, m := &k.bits[bit/64], uint64(1)<<(bit%64)
		if w.Load()&m == 0 {
			seen = false
			w.Or(m)
		}
	}
	if !seen && k.added.Add(1) == k.limit {
		for i := range k.bits {
			k.bits[i].Store(0)
		}
		k.added.Store(0)
	}
	return seen
}
