package passkey

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nmauth/nmauth"
)

// guardedStore puts every call of a Store under [Config.StoreTimeout] and
// turns the Store's own failures into [nmauth.ErrStoreUnavailable], so that
// a store that is down, locked or slow is answered 503 with Retry-After,
// never as a wrong passkey. The Store contract's sentinels, broken stored
// data ([nmauth.ErrDataFault]) and the errors of an update's callback pass
// through unchanged. The deadline reaches the Store through its context,
// which both shipped stores honour.
type guardedStore struct {
	Store
	timeout time.Duration
	log     *slog.Logger
	now     func() time.Time

	mu      sync.Mutex
	logged  time.Time // when the last line was logged
	dropped int       // lines not logged since
}

// call runs op under the deadline; keep reports errors that are not the
// Store's failures, besides the contract's sentinels.
func (s *guardedStore) call(ctx context.Context, what string, op func(context.Context) error, keep func(error) bool) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	err := op(ctx)
	switch {
	case err == nil, errors.Is(err, nmauth.ErrNotFound), errors.Is(err, nmauth.ErrExists), keep != nil && keep(err):
		return err
	case errors.Is(err, nmauth.ErrDataFault):
		s.log.Error("stored passkeys unusable", "op", what, "err", err)
		return err
	}
	s.logLimited(slog.LevelError, "passkey store unavailable", "op", what, "err", err)
	return fmt.Errorf("%w: passkey store: %s: %w", nmauth.ErrStoreUnavailable, what, err)
}

// logLimited logs a Store failure or a flow without room for challenges,
// at most one line a second of either, with the number of lines not
// logged since the last one.
func (s *guardedStore) logLimited(level slog.Level, msg string, args ...any) {
	s.mu.Lock()
	now := s.now()
	if !s.logged.IsZero() && now.Sub(s.logged) < time.Second && !now.Before(s.logged) {
		s.dropped++
		s.mu.Unlock()
		return
	}
	dropped := s.dropped
	s.logged, s.dropped = now, 0
	s.mu.Unlock()
	s.log.Log(context.Background(), level, msg, append(args, "not_logged_since_last", dropped)...)
}

func (s *guardedStore) GetRecord(ctx context.Context, user string) (r Record, err error) {
	err = s.call(ctx, "get record", func(ctx context.Context) error {
		r, err = s.Store.GetRecord(ctx, user)
		return err
	}, nil)
	return r, err
}

func (s *guardedStore) RecordByHandle(ctx context.Context, handle []byte) (r Record, err error) {
	err = s.call(ctx, "record by handle", func(ctx context.Context) error {
		r, err = s.Store.RecordByHandle(ctx, handle)
		return err
	}, nil)
	return r, err
}

func (s *guardedStore) CreateRecord(ctx context.Context, r Record) error {
	return s.call(ctx, "create record", func(ctx context.Context) error { return s.Store.CreateRecord(ctx, r) }, nil)
}

// UpdateRecord returns fn's own error unchanged; any other is the Store's.
func (s *guardedStore) UpdateRecord(ctx context.Context, user string, fn func(*Record) error) error {
	var fnErr error
	return s.call(ctx, "update record", func(ctx context.Context) error {
		return s.Store.UpdateRecord(ctx, user, func(r *Record) error {
			fnErr = fn(r)
			return fnErr
		})
	}, func(err error) bool { return fnErr != nil && err == fnErr })
}

func (s *guardedStore) DeleteRecord(ctx context.Context, user string) error {
	return s.call(ctx, "delete record", func(ctx context.Context) error { return s.Store.DeleteRecord(ctx, user) }, nil)
}

// PutChallenge returns [ErrChallengesFull] as it is, and logs it at the
// rate of the Store's failures.
func (s *guardedStore) PutChallenge(ctx context.Context, c Challenge, now time.Time, limit int) error {
	err := s.call(ctx, "put challenge", func(ctx context.Context) error { return s.Store.PutChallenge(ctx, c, now, limit) },
		func(err error) bool { return errors.Is(err, ErrChallengesFull) })
	if errors.Is(err, ErrChallengesFull) {
		s.logLimited(slog.LevelWarn, "passkey challenges full: ceremonies refused until some end or expire", "flow", string(c.Flow), "limit", limit)
	}
	return err
}

func (s *guardedStore) TakeChallenge(ctx context.Context, key string) (c Challenge, err error) {
	err = s.call(ctx, "take challenge", func(ctx context.Context) error {
		c, err = s.Store.TakeChallenge(ctx, key)
		return err
	}, nil)
	return c, err
}
