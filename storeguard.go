package nmauth

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

// guardedStore puts every call of a Store under Config.StoreTimeout and
// turns the Store's own failures into ErrStoreUnavailable, so that a
// store that is down, locked, full or slow is answered as a fault of the
// server, within the deadline, and never as a wrong credential.
//
// The sentinels of the Store contract (ErrNotFound, ErrExists) and the
// errors of an update callback pass through unchanged.
type guardedStore struct {
	Store
	timeout time.Duration
	log     *faultLog
	// panics logs the Store's panics, apart from its failures, so that
	// neither kind of line hides the other.
	panics *faultLog
	// idle hands a call to a goroutine that has run one before and waits
	// for another (see run).
	idle chan func()
}

// newGuardedStore puts cfg.Store under the guard, logging to cfg.Logger.
func newGuardedStore(cfg Config) *guardedStore {
	return &guardedStore{
		Store:   cfg.Store,
		timeout: cfg.StoreTimeout,
		log:     &faultLog{log: cfg.Logger, now: cfg.Now, interval: time.Second},
		panics:  &faultLog{log: cfg.Logger, now: cfg.Now, interval: time.Second},
		idle:    make(chan func()),
	}
}

// workerIdle is how long a goroutine that ran a Store call waits for the
// next before it ends.
const workerIdle = 10 * time.Second

// run runs job on a goroutine of its own: one that ran a call before and
// is waiting for the next, or else a new one. A SQL driver's call goes
// deep, and a new goroutine would grow and copy its stack on every call;
// one that is reused grew it once. A goroutine stays busy as long as its
// call does, so a Store that hangs takes new goroutines, never the place
// of a call that would answer.
func (s *guardedStore) run(job func()) {
	select {
	case s.idle <- job:
	default:
		go s.work(job)
	}
}

func (s *guardedStore) work(job func()) {
	timer := time.NewTimer(workerIdle)
	defer timer.Stop()
	for {
		job()
		timer.Reset(workerIdle)
		select {
		case job = <-s.idle:
		case <-timer.C:
			return
		}
	}
}

// checkStore refuses a Store that is nil or a nil pointer (or map, slice,
// func, chan) of a type that implements Store: either would be accepted by
// New and fail only at its first use.
func checkStore(s Store) error {
	if s == nil {
		return errors.New("nmauth: Config.Store is required")
	}
	v := reflect.ValueOf(s)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		if v.IsNil() {
			return fmt.Errorf("nmauth: Config.Store is a nil %T; give it a value, such as nmauth.NewMemoryStore()", s)
		}
	}
	return nil
}

// storePanic is a panic of the Store, recovered on the goroutine the guard
// ran the call on. It answers 500: a bug, not a fault that waiting mends.
type storePanic struct {
	what  string
	value any
}

func (p *storePanic) Error() string {
	return fmt.Sprintf("nmauth: the store panicked in %s: %v", p.what, p.value)
}

// call runs op under the deadline. op runs on a goroutine of its own so that
// the answer leaves at the deadline even if the Store does not honour its
// context; the Store still gets the cancellation, so its transaction
// rolls back. keep reports the errors that are not the Store's failures.
//
// No recover of the caller's (net/http's, a router's) reaches op's
// goroutine, so a panic there would end the process: it is recovered
// here, logged with its stack at a bounded rate, and returned as an error
// of this call alone.
func (s *guardedStore) call(ctx context.Context, what string, op func(context.Context) error, keep func(error) bool) error {
	// A call within a login already has the login's deadline, which is
	// no later than this one would be: it needs no timer of its own.
	if deadline, ok := ctx.Deadline(); !ok || time.Until(deadline) > s.timeout {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	done := make(chan error, 1)
	s.run(func() {
		defer func() {
			if v := recover(); v != nil {
				s.panics.storePanicked(what, v, debug.Stack())
				done <- &storePanic{what: what, value: v}
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
	if p, ok := err.(*storePanic); ok {
		return p
	}
	if err == nil || keep(err) {
		return err
	}
	// A caller that went away (a client gone, a Shutdown) needs no log
	// line: the Store did not fail.
	if !errors.Is(err, context.Canceled) || ctx.Err() != context.Canceled {
		s.log.storeFailed(what, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrStoreUnavailable, what, err)
}

// contractError reports the errors the Store contract gives a meaning:
// they are answers, not failures of the Store. A broken record is its own
// account's fault (500), logged where it is answered, with the account
// and column its error names.
func contractError(err error) bool {
	return errors.Is(err, ErrNotFound) || errors.Is(err, ErrExists) || errors.Is(err, ErrBrokenRecord)
}

func (s *guardedStore) GetUser(ctx context.Context, name string) (User, error) {
	return guardedResult(s, ctx, "get user", func(ctx context.Context) (User, error) { return s.Store.GetUser(ctx, name) }, contractError)
}

func (s *guardedStore) ListUsers(ctx context.Context, after string, limit int) ([]User, error) {
	return guardedList(s, ctx, "list users", func(ctx context.Context) ([]User, error) { return s.Store.ListUsers(ctx, after, limit) })
}

func (s *guardedStore) ListHosts(ctx context.Context, after string, limit int) ([]Host, error) {
	return guardedList(s, ctx, "list hosts", func(ctx context.Context) ([]Host, error) { return s.Store.ListHosts(ctx, after, limit) })
}

// guardedList is guardedResult for a listing, which the Store may answer
// with what it read beside its error: that is returned too, when the
// call answered in time.
func guardedList[T any](g *guardedStore, ctx context.Context, what string, op func(context.Context) ([]T, error)) ([]T, error) {
	var got atomic.Pointer[[]T]
	err := g.call(ctx, what, func(ctx context.Context) error {
		v, err := op(ctx)
		got.Store(&v)
		return err
	}, contractError)
	if p := got.Load(); p != nil && (err == nil || contractError(err)) {
		return *p, err
	}
	return nil, err
}

func (s *guardedStore) CreateUser(ctx context.Context, u User) error {
	return s.call(ctx, "create user", func(ctx context.Context) error { return s.Store.CreateUser(ctx, u) }, contractError)
}

func (s *guardedStore) DeleteUser(ctx context.Context, name string) error {
	return s.call(ctx, "delete user", func(ctx context.Context) error { return s.Store.DeleteUser(ctx, name) }, contractError)
}

func (s *guardedStore) GetHost(ctx context.Context, id string) (h Host, err error) {
	h, err = guardedResult(s, ctx, "get host", func(ctx context.Context) (Host, error) { return s.Store.GetHost(ctx, id) }, contractError)
	return h, err
}

func (s *guardedStore) CreateHost(ctx context.Context, h Host) error {
	return s.call(ctx, "create host", func(ctx context.Context) error { return s.Store.CreateHost(ctx, h) }, contractError)
}

func (s *guardedStore) DeleteHost(ctx context.Context, id string) error {
	return s.call(ctx, "delete host", func(ctx context.Context) error { return s.Store.DeleteHost(ctx, id) }, contractError)
}

// UpdateUser runs fn on a copy and hands the caller's fn the result only
// once the Store has committed, so that an update abandoned at the
// deadline never leaks a half-made change into the caller's variables.
func (s *guardedStore) UpdateUser(ctx context.Context, name string, fn func(*User) error) error {
	return guardUpdate(s, ctx, "update user", name, s.Store.UpdateUser, fn, cloneUser)
}

func (s *guardedStore) UpdateHost(ctx context.Context, id string, fn func(*Host) error) error {
	return guardUpdate(s, ctx, "update host", id, s.Store.UpdateHost, fn, cloneHost)
}

// guardUpdate runs an update under the deadline. fn's own error is
// returned unchanged; any other error is the Store's. fn runs on the
// Store's goroutine, under a lock that makes its writes visible here once
// the update returns; past the deadline the caller no longer waits, and
// whatever fn wrote is never read.
func guardUpdate[R any](s *guardedStore, ctx context.Context, what, key string,
	update func(context.Context, string, func(*R) error) error, fn func(*R) error, clone func(R) R) error {
	var mu sync.Mutex
	var fnErr error
	abandoned := false
	err := s.call(ctx, what, func(ctx context.Context) error {
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
		return contractError(err) || fnErr != nil && err == fnErr
	})
	mu.Lock()
	abandoned = true
	mu.Unlock()
	return err
}

// faultLog logs Store failures at a bounded rate: at most one line per
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

func (l *faultLog) storeFailed(what string, err error) {
	if ok, dropped := l.allow(); ok {
		l.log.Error("store unavailable", "op", what, "err", err, "not_logged_since_last", dropped)
	}
}

func (l *faultLog) storePanicked(what string, value any, stack []byte) {
	if ok, dropped := l.allow(); ok {
		l.log.Error("store panicked", "op", what, "panic", fmt.Sprint(value), "stack", string(stack), "not_logged_since_last", dropped)
	}
}

// Ready reports whether the Store answers within [Config.StoreTimeout]:
// nil, or an error matching [ErrStoreUnavailable]. It suits a readiness
// probe: the Store is asked for a user that cannot exist (its name has a
// space, which no prepared username has), which a SQL store answers from
// its primary key.
func (a *Authenticator) Ready(ctx context.Context) error {
	_, err := a.store.GetUser(ctx, readinessProbe)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// readinessProbe is the name [Authenticator.Ready] asks for.
const readinessProbe = "nmauth readiness"

// ask runs one of the application's hooks (Config.SecondFactor,
// NodeMember, NodeTokenValid), which typically read a database of the
// application's, as a Store call is run: under the Store deadline, even
// if the hook ignores its context, with a panic contained (a 500). Any
// error, the deadline's included, is [ErrStoreUnavailable].
func (s *guardedStore) ask(ctx context.Context, what string, hook func(context.Context) (bool, error)) (bool, error) {
	var ok atomic.Bool
	err := s.call(ctx, what, func(ctx context.Context) error {
		v, err := hook(ctx)
		ok.Store(v)
		return err
	}, func(error) bool { return false })
	return ok.Load() && err == nil, err
}
