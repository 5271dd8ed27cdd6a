// Package memtable is a table of records held in memory under string
// keys: what a memory store keeps of one kind of record. It clones a
// record on its way in and on its way out, so that callers and the table
// never share backing arrays, and keeps the keys in byte order for paging.
//
// A Table holds no lock: its owner guards all its tables with one mutex,
// which [Lock] and [Do] hold around an operation, so that one that spans
// kinds (create a host and count a use of the key it joined with) is one
// atomic step. Find, Insert and Change answer with the owner's errors. The zero Table is empty and
// ready to use.
package memtable

import (
	"context"
	"iter"
	"maps"
	"slices"
	"sync"
)

// Lock runs fn holding mu, the one lock of an owner's tables, unless ctx
// is done already.
func Lock[R any](ctx context.Context, mu *sync.Mutex, fn func() (R, error)) (R, error) {
	if err := ctx.Err(); err != nil {
		var zero R
		return zero, err
	}
	mu.Lock()
	defer mu.Unlock()
	return fn()
}

// Do is [Lock] for an operation that returns only an error.
func Do(ctx context.Context, mu *sync.Mutex, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	return fn()
}

// Kind tells a [Table] how to handle its records. It is a type without
// fields, so that a Table of it is ready to use as its zero value.
type Kind[T any] interface {
	// Clone copies v so that the copy shares no backing array with it.
	Clone(v T) T
	// Key points at the field of *v that holds its key.
	Key(v *T) *string
}

// Table is a table of records of type T, each under the key that its
// [Kind] K reads from it.
type Table[T any, K Kind[T]] struct {
	rows map[string]T
	// keys are the keys in byte order, for paging; they are sorted again
	// only by the first page read after a create or a delete (stale), so
	// that walking a large table sorts it once.
	keys  []string
	stale bool
}

// Len returns how many records the table holds.
func (t *Table[T, K]) Len() int { return len(t.rows) }

// Get returns a clone of the record under key, and whether there is one.
func (t *Table[T, K]) Get(key string) (v T, ok bool) {
	if v, ok = t.rows[key]; ok {
		var k K
		v = k.Clone(v)
	}
	return v, ok
}

// Find is [Table.Get] with missing, the owner's error, when there is no
// record.
func (t *Table[T, K]) Find(key string, missing error) (T, error) {
	v, ok := t.Get(key)
	if !ok {
		return v, missing
	}
	return v, nil
}

// Insert is [Table.Create] with taken, the owner's error, when the key is
// taken.
func (t *Table[T, K]) Insert(v T, taken error) error {
	if !t.Create(v) {
		return taken
	}
	return nil
}

// Change is [Table.Update] with missing, the owner's error, when there is
// no record.
func (t *Table[T, K]) Change(key string, fn func(*T) error, missing error) error {
	found, err := t.Update(key, fn)
	if !found {
		return missing
	}
	return err
}

// Remove is [Table.Delete] for an owner that answers with an error: it
// returns nil.
func (t *Table[T, K]) Remove(key string) error {
	t.Delete(key)
	return nil
}

// Create stores a clone of v under its key, unless that key is taken, and
// reports whether it did.
func (t *Table[T, K]) Create(v T) bool {
	var k K
	if _, ok := t.rows[*k.Key(&v)]; ok {
		return false
	}
	t.Put(v)
	return true
}

// Put stores a clone of v under its key, in place of any record there.
func (t *Table[T, K]) Put(v T) {
	var k K
	key := *k.Key(&v)
	if t.rows == nil {
		t.rows = make(map[string]T)
	}
	if _, ok := t.rows[key]; !ok {
		t.stale = true
	}
	t.rows[key] = k.Clone(v)
}

// Update calls fn with a clone of the record under key and, if fn returns
// nil, stores what fn left, under key whatever fn did to the record's key
// field. It reports whether there was a record, and returns fn's error;
// on an error the record stays as it was.
func (t *Table[T, K]) Update(key string, fn func(*T) error) (found bool, err error) {
	v, ok := t.rows[key]
	if !ok {
		return false, nil
	}
	var k K
	v = k.Clone(v)
	if err := fn(&v); err != nil {
		return true, err
	}
	*k.Key(&v) = key
	t.rows[key] = v
	return true, nil
}

// Delete removes the record under key; a missing key is a no-op.
func (t *Table[T, K]) Delete(key string) {
	if _, ok := t.rows[key]; ok {
		delete(t.rows, key)
		t.stale = true
	}
}

// All yields every key and record, in no order. The records are the
// table's own, not clones: a caller that hands one out clones it. The
// caller may [Table.Delete] records as it goes.
func (t *Table[T, K]) All() iter.Seq2[string, T] { return maps.All(t.rows) }

// Page returns clones of the records whose keys are greater than after in
// byte order, at most limit of them, in key order; none when limit is not
// positive.
func (t *Table[T, K]) Page(after string, limit int) []T {
	out := t.PageShared(after, limit)
	var k K
	for i := range out {
		out[i] = k.Clone(out[i])
	}
	return out
}

// PageShared is [Table.Page] without the clones: the records share their
// backing arrays with the table's, and the caller must not change what
// they point at.
func (t *Table[T, K]) PageShared(after string, limit int) []T {
	keys := t.pageKeys(after, limit)
	out := make([]T, len(keys))
	for i, key := range keys {
		out[i] = t.rows[key]
	}
	return out
}

// pageKeys returns the keys greater than after, at most limit of them,
// sorting the keys first if they are stale.
func (t *Table[T, K]) pageKeys(after string, limit int) []string {
	if limit <= 0 {
		return nil
	}
	if t.stale || len(t.keys) != len(t.rows) {
		t.keys = slices.Sorted(maps.Keys(t.rows))
		t.stale = false
	}
	i, found := slices.BinarySearch(t.keys, after)
	if found {
		i++
	}
	return t.keys[i:min(i+limit, len(t.keys))]
}
