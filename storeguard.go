package nmauth

import (
	"context"
	"errors"
	"fmt"

	"github.com/nmauth/nmauth/internal/guard"
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
	g *guard.Guard
}

// newGuardedStore puts cfg.Store under the guard, logging to cfg.Logger.
func newGuardedStore(cfg Config) *guardedStore {
	return &guardedStore{Store: cfg.Store, g: guard.New(cfg.StoreTimeout, ErrStoreUnavailable, cfg.Logger, cfg.Now)}
}

// checkStore refuses a Store that is nil, or a nil value of a type that
// implements Store (see [guard.Nil]).
func checkStore(s Store) error {
	switch {
	case s == nil:
		return errors.New("nmauth: Config.Store is required")
	case guard.Nil(s):
		return fmt.Errorf("nmauth: Config.Store is a nil %T; give it a value, such as nmauth.NewMemoryStore()", s)
	}
	return nil
}

// contractError reports the errors the Store contract gives a meaning:
// they are answers, not failures of the Store. A broken record is its own
// account's fault (500), logged where it is answered, with the account
// and column its error names.
func contractError(err error) bool {
	return errors.Is(err, ErrNotFound) || errors.Is(err, ErrExists) || errors.Is(err, ErrBrokenRecord)
}

func (s *guardedStore) GetUser(ctx context.Context, name string) (User, error) {
	return guard.Result(s.g, ctx, "get user", func(ctx context.Context) (User, error) { return s.Store.GetUser(ctx, name) }, contractError)
}

func (s *guardedStore) ListUsers(ctx context.Context, after string, limit int) ([]User, error) {
	return guard.List(s.g, ctx, "list users", func(ctx context.Context) ([]User, error) { return s.Store.ListUsers(ctx, after, limit) }, contractError)
}

func (s *guardedStore) ListHosts(ctx context.Context, after string, limit int) ([]Host, error) {
	return guard.List(s.g, ctx, "list hosts", func(ctx context.Context) ([]Host, error) { return s.Store.ListHosts(ctx, after, limit) }, contractError)
}

func (s *guardedStore) CreateUser(ctx context.Context, u User) error {
	return s.g.Call(ctx, "create user", func(ctx context.Context) error { return s.Store.CreateUser(ctx, u) }, contractError)
}

func (s *guardedStore) DeleteUser(ctx context.Context, name string) error {
	return s.g.Call(ctx, "delete user", func(ctx context.Context) error { return s.Store.DeleteUser(ctx, name) }, contractError)
}

func (s *guardedStore) GetHost(ctx context.Context, id string) (Host, error) {
	return guard.Result(s.g, ctx, "get host", func(ctx context.Context) (Host, error) { return s.Store.GetHost(ctx, id) }, contractError)
}

func (s *guardedStore) CreateHost(ctx context.Context, h Host) error {
	return s.g.Call(ctx, "create host", func(ctx context.Context) error { return s.Store.CreateHost(ctx, h) }, contractError)
}

func (s *guardedStore) DeleteHost(ctx context.Context, id string) error {
	return s.g.Call(ctx, "delete host", func(ctx context.Context) error { return s.Store.DeleteHost(ctx, id) }, contractError)
}

// UpdateUser runs fn only while its caller waits (see [guard.Update]), so
// that an update abandoned at the deadline never leaks a half-made change
// into the caller's variables.
func (s *guardedStore) UpdateUser(ctx context.Context, name string, fn func(*User) error) error {
	return guard.Update(s.g, ctx, "update user", name, s.Store.UpdateUser, fn, contractError)
}

func (s *guardedStore) UpdateHost(ctx context.Context, id string, fn func(*Host) error) error {
	return guard.Update(s.g, ctx, "update host", id, s.Store.UpdateHost, fn, contractError)
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
