// Package expiry is the heap of expiry times that the memory stores of
// sso/ and passkey/ keep beside their maps, so that a put drops what has
// expired without a scan of the map.
//
// The heap is lazy: an entry whose key was taken or stored again stays
// until it comes up, and the caller, which holds the live values, checks
// each entry that comes up against what it holds. [Heap.Push] builds the
// heap again from the live values once the entries outnumber them twice
// over, so that takes do not make it grow without bound.
package expiry

import (
	"container/heap"
	"time"
)

// Heap holds keys of type K by the time they expire, soonest first. The
// zero value is an empty heap. It is not safe for concurrent use: its
// store guards it with the lock of the maps it indexes.
type Heap[K any] struct {
	entries entries[K]
}

// entry is when key expires.
type entry[K any] struct {
	at  time.Time
	key K
}

// entries is a min-heap of entries for container/heap.
type entries[K any] []entry[K]

func (h entries[K]) Len() int           { return len(h) }
func (h entries[K]) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h entries[K]) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entries[K]) Push(x any)        { *h = append(*h, x.(entry[K])) }
func (h *entries[K]) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// Len is the number of entries, live or not.
func (h *Heap[K]) Len() int { return len(h.entries) }

// Push notes that key, just stored, expires at at. When the entries then
// number more than twice live (the values the store holds) and 64 more,
// it builds the heap again from the entries that each gives, one call of
// add for every live value.
func (h *Heap[K]) Push(at time.Time, key K, live int, each func(add func(at time.Time, key K))) {
	heap.Push(&h.entries, entry[K]{at, key})
	if len(h.entries) <= 2*live+64 {
		return
	}
	h.entries = h.entries[:0]
	each(func(at time.Time, key K) { h.entries = append(h.entries, entry[K]{at, key}) })
	heap.Init(&h.entries)
}

// PopDue pops, soonest first, every entry that expires at or before now,
// and calls due with its key and expiry; due drops the value it holds
// for key if that value expires at that time, and else keeps it.
func (h *Heap[K]) PopDue(now time.Time, due func(key K, at time.Time)) {
	for len(h.entries) > 0 && !now.Before(h.entries[0].at) {
		e := heap.Pop(&h.entries).(entry[K])
		due(e.key, e.at)
	}
}
