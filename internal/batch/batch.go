// Package batch is a bounded queue whose items one goroutine applies in
// batches: a group commit, one write for many items. It knows nothing of
// the items beyond what its [Writer] does with them.
package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Writer applies the batches of a [Queue].
type Writer[T any] interface {
	// Write applies batch, the oldest items queued, in their order. An
	// error, or a panic, means that the batch is to be tried again: it
	// stays at the head of the queue, counted against its bound, until
	// Write takes it.
	Write(batch []T) error
	// Failed is told of each Write that failed, with its error (a
	// [*Panic] for a panic); again reports whether the Write before it
	// failed too.
	Failed(batch []T, err error, again bool)
	// Recovered is told of a Write that took its batch after one or more
	// that failed.
	Recovered()
}

// A failed batch is tried again after retry, doubling up to maxRetry.
const (
	retry    = 50 * time.Millisecond
	maxRetry = time.Second
)

// Queue queues items and applies them in batches on one goroutine, which
// runs while items wait and ends when none do; so items are applied in
// the order they were queued, and a Queue that is dropped leaves no
// goroutine behind once its items are applied.
type Queue[T any] struct {
	w     Writer[T]
	bound int
	size  int

	mu      sync.Mutex
	queue   []T
	running bool
	// idle is closed when the goroutine ends with nothing queued.
	idle chan struct{}
	// busy counts the items taken from the queue and not yet written.
	busy int
}

// New returns a queue of at most bound items, which w applies in batches
// of at most size.
func New[T any](w Writer[T], bound, size int) *Queue[T] {
	idle := make(chan struct{})
	close(idle)
	return &Queue[T]{w: w, bound: bound, size: size, idle: idle}
}

// Enqueue queues item; it reports false, queuing nothing, when the queue
// is full.
func (q *Queue[T]) Enqueue(item T) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.queue)+q.busy >= q.bound {
		return false
	}
	q.queue = append(q.queue, item)
	if !q.running {
		q.running = true
		q.idle = make(chan struct{})
		go q.run()
	}
	return true
}

// run applies the queued items, a batch at a time, until none wait.
func (q *Queue[T]) run() {
	wait := retry
	failing := false
	for {
		q.mu.Lock()
		if len(q.queue) == 0 && q.busy == 0 {
			q.running = false
			close(q.idle)
			q.mu.Unlock()
			return
		}
		if q.busy == 0 {
			q.busy = min(len(q.queue), q.size)
		}
		batch := slices.Clone(q.queue[:q.busy])
		q.mu.Unlock()
		if err := q.write(batch); err != nil {
			q.w.Failed(batch, err, failing)
			failing = true
			time.Sleep(wait)
			wait = min(2*wait, maxRetry)
			continue
		}
		if failing {
			q.w.Recovered()
		}
		wait, failing = retry, false
		q.mu.Lock()
		q.queue = slices.Delete(q.queue, 0, q.busy)
		q.busy = 0
		q.mu.Unlock()
	}
}

// write is the Writer's Write, with a panic of it returned as a *Panic.
func (q *Queue[T]) write(batch []T) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &Panic{Value: v, Stack: string(debug.Stack())}
		}
	}()
	return q.w.Write(batch)
}

// Panic is a panic of a Write, with its stack.
type Panic struct {
	Value any
	Stack string
}

func (e *Panic) Error() string {
	return fmt.Sprintf("batch: the write panicked: %v", e.Value)
}

// Flush waits until every item queued so far is applied, or ctx ends,
// whose error it returns with the number of items that wait.
func (q *Queue[T]) Flush(ctx context.Context) (int, error) {
	q.mu.Lock()
	idle := q.idle
	q.mu.Unlock()
	select {
	case <-idle:
		return 0, nil
	case <-ctx.Done():
		q.mu.Lock()
		n := len(q.queue)
		q.mu.Unlock()
		return n, ctx.Err()
	}
}

// Failing is what a [Writer] keeps and tells of the batches that fail: it
// is set from a failed Write until one takes its batch again, and it logs
// one line when batches start to fail (with the stack of a panic) and one
// when they are taken again.
type Failing struct {
	Log *slog.Logger
	// Waits, Panicked and Back are the messages of the lines logged for a
	// failed Write, a panicked one, and a Write taken again.
	Waits, Panicked, Back string

	failing atomic.Bool
}

// Failed is told of a Write of n items that failed with err, as
// [Writer.Failed] is.
func (f *Failing) Failed(n int, err error, again bool) {
	f.failing.Store(true)
	var p *Panic
	switch {
	case again:
	case errors.As(err, &p):
		f.Log.Error(f.Panicked, "writes", n, "panic", p.Value, "stack", p.Stack)
	default:
		f.Log.Warn(f.Waits, "writes", n, "err", err)
	}
}

// Recovered is told of a Write taken after failed ones, as
// [Writer.Recovered] is.
func (f *Failing) Recovered() {
	f.Log.Info(f.Back)
	f.failing.Store(false)
}

// Load reports whether the last Write failed.
func (f *Failing) Load() bool { return f.failing.Load() }
