package standing

import (
	"sync/atomic"

	"github.com/maypok86/otter/v2"
)

// Cache holds a place of type P for each key it was asked for, up to a
// bound of keys: an otter cache bounded in entries, which drops one at a
// time when full, while whoever still points to a dropped place keeps
// it. Each key has an epoch, from a table of its own, shared by the keys
// of one name.
type Cache[K comparable, P any] struct {
	places *otter.Cache[K, *P]
	epochs *Epochs
	name   func(K) string
	make   func(K, *atomic.Uint64) *P
}

// NewCache returns a cache of up to size places. name names a key for
// its epoch; make makes the place of a key the cache holds none for,
// given the key's epoch counter.
func NewCache[K comparable, P any](size int, name func(K) string, make func(K, *atomic.Uint64) *P) *Cache[K, P] {
	return &Cache[K, P]{
		places: otter.Must(&otter.Options[K, *P]{MaximumSize: size}),
		epochs: NewEpochs(),
		name:   name,
		make:   make,
	}
}

// Epoch returns the epoch counter of k. A change to k's account bumps it,
// so that a read begun before the change keeps nothing.
func (c *Cache[K, P]) Epoch(k K) *atomic.Uint64 { return c.epochs.Of(c.name(k)) }

// Place returns the place of k, making one if the cache holds none.
func (c *Cache[K, P]) Place(k K) *P {
	if p, ok := c.places.GetIfPresent(k); ok {
		return p
	}
	p, _ := c.places.SetIfAbsent(k, c.make(k, c.Epoch(k)))
	return p
}

// Peek returns the place of k if the cache holds one, else nil, adding
// none.
func (c *Cache[K, P]) Peek(k K) *P {
	p, _ := c.places.GetIfPresent(k)
	return p
}

// EstimatedSize is the number of places the cache holds, an estimate
// while places are added or dropped.
func (c *Cache[K, P]) EstimatedSize() int { return c.places.EstimatedSize() }
