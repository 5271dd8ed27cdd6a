// Package guard runs the calls of a party the library does not control (a
// Store, an application's hook) under a deadline: the caller's answer
// leaves at the deadline even if the call does not honour its context, a
// panic of the call is contained and returned as an error of that call
// alone, and failures are logged at a bounded rate. It knows nothing of
// what it calls beyond its name (what) and which of its errors are
// answers rather than failures (keep). [Nil] refuses a party that is nil
// behind its interface before any call.
package guard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Guard runs calls under a deadline of its own, and turns their failures
// into its unavailable error.
type Guard struct {
	timeout     time.Duration
	unavailable error
	log         *faultLog
	// panics logs the calls' panics, apart from their failures, so that
	// neither kind of line hides the other.
	panics *faultLog
	// idle hands a call to a goroutine that has run one before and waits
	// for another (see run).
	idle chan func()
}

// New returns a guard whose calls each have at most timeout, and whose
// failures match unavailable and are logged to log, one line per second
// at most, by the clock now.
func New(timeout time.Duration, unavailable error, log *slog.Logger, now func() time.Time) *Guard {
	return &Guard{
		timeout:     timeout,
		unavailable: unavailable,
		log:         &faultLog{log: log, now: now, interval: time.Second},
		panics:      &faultLog{log: log, now: now, interval: time.Second},
		idle:        make(chan func()),
	}
}

// Nil reports whether v, a party given to be called, is nil or a nil
// pointer, map, slice, func or chan behind an interface: either would be
// accepted and fail only at its first call.
func Nil(v any) bool {
	if v == nil {
		return true
	}
	switch r := reflect.ValueOf(v); r.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return r.IsNil()
	}
	return false
}

// workerIdle is how long a goroutine that ran a call waits for the next
// before it ends.
const workerIdle = 10 * time.Second

// run runs job on a goroutine of its own: one that ran a call before and
// is waiting for the next, or else a new one. A SQL driver's call goes
// deep, and a new goroutine would grow and copy its stack on every call;
// one that is reused grew it once. A goroutine stays busy as long as its
// call does, so a call that hangs takes new goroutines, never the place
// of a call that would answer.
func (g *Guard) run(job func()) {
	select {
	case g.idle <- job:
	default:
		go g.work(job)
	}
}

func (g *Guard) work(job func()) {
	timer := time.NewTimer(workerIdle)
	defer timer.Stop()
	for {
		job()
		timer.Reset(workerIdle)
		select {
		case job = <-g.idle:
		case <-timer.C:
			return
		}
	}
}

// Panic is a panic of a call, recovered on the goroutine the guard ran the
// call on: a bug, not a fault that waiting mends.
type Panic struct {
	What  string
	Value any
}

func (p *Panic) Error() string {
	return fmt.Sprintf("nmauth: the store panicked in %s: %v", p.What, p.Value)
}

// Call runs op under the deadline. op runs on a goroutine of its own so
// that the answer leaves at the deadline even if op does not honour its
// context; op still gets the cancellation, so a Store's transaction
// rolls back. keep reports the errors that are not failures: those, nil
// and a [*Panic] are returned as they are; any other error is logged and
// returned wrapped in the unavailable error, naming what.
//
// No recover of the caller's (net/http's, a router's) reaches op's
// goroutine, so a panic there would end the process: it is recovered
// here, logged with its stack at a bounded rate, and returned as an error
// of this call alone.
func (g *Guard) Call(ctx context.Context, what string, op func(context.Context) error, keep func(error) bool) error {
	// A call within a login already has the login's deadline, which is
	// no later than this one would be: it needs no timer of its own.
	if deadline, ok := ctx.Deadline(); !ok || time.Until(deadline) > g.timeout {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.timeout)
		defer cancel()
	}
	done := make(chan error, 1)
	g.run(func() {
		defer func() {
			if v := recover(); v != nil {
				g.panics.panicked(what, v, debug.Stack())
				done <- &Panic{What: what, Value: v}
			}
		}()
		done <- op(ctx)
	})
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if p, ok := err.(*Panic); ok {
		return p
	}
	if err == nil || keep(err) {
		return err
	}
	// A caller that went away (a client gone, a Shutdown) needs no log
	// line: the call did not fail.
	if !errors.Is(err, context.Canceled) || ctx.Err() != context.Canceled {
		g.log.failed(what, err)
	}
	return fmt.Errorf("%w: %s: %w", g.unavailable, what, err)
}

// Result is Call for an op that returns a value, which is returned only
// when the call answered in time with nil: a call past its deadline may
// still be running, and its value is never read.
func Result[T any](g *Guard, ctx context.Context, what string, op func(context.Context) (T, error), keep func(error) bool) (T, error) {
	var got atomic.Pointer[T]
	err := g.Call(ctx, what, func(ctx context.Context) error {
		v, err := op(ctx)
		if err == nil {
			got.Store(&v)
		}
		return err
	}, keep)
	if p := got.Load(); err == nil && p != nil {
		return *p, nil
	}
	var zero T
	return zero, err
}

// List is Call for a listing, which op may answer with what it read
// beside its error: that is returned too, when the call answered in time
// with nil or an error that keep keeps.
func List[T any](g *Guard, ctx context.Context, what string, op func(context.Context) ([]T, error), keep func(error) bool) ([]T, error) {
	var got atomic.Pointer[[]T]
	err := g.Call(ctx, what, func(ctx context.Context) error {
		v, err := op(ctx)
		got.Store(&v)
		return err
	}, keep)
	if p := got.Load(); p != nil && (err == nil || keep(err)) {
		return *p, err
	}
	return nil, err
}

// Update runs an update of the record key under the deadline. fn's own
// error is returned unchanged, as are those that keep keeps; any other
// error is a failure. fn runs on the call's goroutine, under a lock that
// makes its writes visible here once the update returns; past the
// deadline the caller no longer waits, and whatever fn wrote is never
// read.
func Update[R any](g *Guard, ctx context.Context, what, key string,
	update func(context.Context, string, func(*R) error) error, fn func(*R) error, keep func(error) bool) error {
	var mu sync.Mutex
	var fnErr error
	abandoned := false
	err := g.Call(ctx, what, func(ctx context.Context) error {
		return update(ctx, key, func(r *R) error {
			mu.Lock()
			defer mu.Unlock()
			if abandoned {
				return context.DeadlineExceeded
			}
			fnErr = fn(r)
			return fnErr
		})
	}, func(err error) bool {
		mu.Lock()
		defer mu.Unlock()
		abandoned = true
		return keep(err) || fnErr != nil && err == fnErr
	})
	mu.Lock()
	abandoned = true
	mu.Unlock()
	return err
}

// Ask runs hook, one of an application's hooks (which typically read a
// database of the application's), as Call runs a call: under the
// deadline even if the hook ignores its context, with a panic contained.
// Every error of it is a failure; it reports hook's answer, false with
// any error.
func (g *Guard) Ask(ctx context.Context, what string, hook func(context.Context) (bool, error)) (bool, error) {
	var ok atomic.Bool
	err := g.Call(ctx, what, func(ctx context.Context) error {
		v, err := hook(ctx)
		ok.Store(v)
		return err
	}, func(error) bool { return false })
	return ok.Load() && err == nil, err
}

// faultLog logs failures at a bounded rate: at most one line per
// interval, with the number of failures not logged since the last line.
type faultLog struct {
	log      *slog.Logger
	now      func() time.Time
	interval time.Duration

	mu      sync.Mutex
	last    time.Time
	dropped int
}

// allow reports whether a line may be logged now, and how many were not
// logged since the last one that was.
func (l *faultLog) allow() (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if !l.last.IsZero() && now.Sub(l.last) < l.interval && !now.Before(l.last) {
		l.dropped++
		return false, 0
	}
	dropped := l.dropped
	l.last, l.dropped = now, 0
	return true, dropped
}

func (l *faultLog) failed(what string, err error) {
	if ok, dropped := l.allow(); ok {
		l.log.Error("store unavailable", "op", what, "err", err, "not_logged_since_last", dropped)
	}
}

func (l *faultLog) panicked(what string, value any, stack []byte) {
	if ok, dropped := l.allow(); ok {
		l.log.Error("store panicked", "op", what, "panic", fmt.Sprint(value), "stack", string(stack), "not_logged_since_last", dropped)
	}
}
