package nmauth

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/nmauth/nmauth/internal/guard"
	"github.com/nmauth/nmauth/internal/memtable"
)

// EnrollmentKeyStore is implemented by a [Store] that keeps enrollment
// keys. [MemoryStore] and [SQLStore] do. An Authenticator whose Store does
// not implement it makes no enrollment keys and lets no host join
// ([ErrEnrollmentKeysOff]).
//
// CreateEnrollmentKey of an existing id returns [ErrExists].
// GetEnrollmentKey of a missing id returns [ErrNotFound].
// ListEnrollmentKeys returns every key, oldest first. RevokeEnrollmentKey
// sets a key's RevokedAt to at unless it is set already, and returns
// [ErrNotFound] for a missing id. DeleteEnrollmentKey of a missing id is a
// no-op.
//
// JoinHost is the join of one host, in one atomic step: when the key
// keyID is stored with digest as its Digest and is usable at now (see
// [EnrollmentKey.Usable]), it counts one use of the key (Used goes up by
// one) and creates h, and returns the key as it is after the use. When the
// key is missing, holds another digest or is not usable, it returns
// [ErrNotFound]; when h's id is taken, [ErrExists]; and in either case it
// writes nothing. The use is taken by one conditional update, whose count
// of rows says whether it was this call's, so that a key of N uses admits
// exactly N joins however many run at once, across processes where the
// Store is shared.
type EnrollmentKeyStore interface {
	CreateEnrollmentKey(ctx context.Context, k EnrollmentKey) error
	GetEnrollmentKey(ctx context.Context, id string) (EnrollmentKey, error)
	ListEnrollmentKeys(ctx context.Context) ([]EnrollmentKey, error)
	RevokeEnrollmentKey(ctx context.Context, id string, at time.Time) error
	DeleteEnrollmentKey(ctx context.Context, id string) error
	JoinHost(ctx context.Context, keyID, digest string, h Host, now time.Time) (EnrollmentKey, error)
}

var _ EnrollmentKeyStore = (*MemoryStore)(nil)

// enrollRow is the [memtable.Kind] of a MemoryStore's enrollment keys.
type enrollRow struct{}

func (enrollRow) Clone(k EnrollmentKey) EnrollmentKey {
	k.Tags, k.Networks = slices.Clone(k.Tags), slices.Clone(k.Networks)
	return k
}

func (enrollRow) Key(k *EnrollmentKey) *string { return &k.ID }

// CreateEnrollmentKey implements [EnrollmentKeyStore].
func (s *MemoryStore) CreateEnrollmentKey(ctx context.Context, k EnrollmentKey) error {
	return memtable.Do(ctx, &s.mu, func() error { return s.enroll.Insert(k, ErrExists) })
}

// GetEnrollmentKey implements [EnrollmentKeyStore].
func (s *MemoryStore) GetEnrollmentKey(ctx context.Context, id string) (EnrollmentKey, error) {
	return memtable.Lock(ctx, &s.mu, func() (EnrollmentKey, error) { return s.enroll.Find(id, ErrNotFound) })
}

// ListEnrollmentKeys implements [EnrollmentKeyStore].
func (s *MemoryStore) ListEnrollmentKeys(ctx context.Context) ([]EnrollmentKey, error) {
	return memtable.Lock(ctx, &s.mu, func() ([]EnrollmentKey, error) {
		out := make([]EnrollmentKey, 0, s.enroll.Len())
		for _, k := range s.enroll.All() {
			out = append(out, enrollRow{}.Clone(k))
		}
		slices.SortFunc(out, func(a, b EnrollmentKey) int {
			return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
		})
		return out, nil
	})
}

// RevokeEnrollmentKey implements [EnrollmentKeyStore].
func (s *MemoryStore) RevokeEnrollmentKey(ctx context.Context, id string, at time.Time) error {
	return memtable.Do(ctx, &s.mu, func() error {
		return s.enroll.Change(id, func(k *EnrollmentKey) error {
			if k.RevokedAt.IsZero() {
				k.RevokedAt = at
			}
			return nil
		}, ErrNotFound)
	})
}

// DeleteEnrollmentKey implements [EnrollmentKeyStore].
func (s *MemoryStore) DeleteEnrollmentKey(ctx context.Context, id string) error {
	return memtable.Do(ctx, &s.mu, func() error { return s.enroll.Remove(id) })
}

// JoinHost implements [EnrollmentKeyStore] under the store's lock.
func (s *MemoryStore) JoinHost(ctx context.Context, keyID, digest string, h Host, now time.Time) (EnrollmentKey, error) {
	return memtable.Lock(ctx, &s.mu, func() (EnrollmentKey, error) {
		k, ok := s.enroll.Get(keyID)
		if !ok || k.Digest != digest || !k.Usable(now) {
			return EnrollmentKey{}, ErrNotFound
		}
		if !s.hosts.Create(h) {
			return EnrollmentKey{}, ErrExists
		}
		k.Used++
		s.enroll.Put(k)
		return k, nil
	})
}

// guardedEnroll is the [EnrollmentKeyStore] of a guarded Store, under the
// same deadline and fault answers as its other calls.
type guardedEnroll struct {
	g     *guardedStore
	inner EnrollmentKeyStore
}

func (e *guardedEnroll) CreateEnrollmentKey(ctx context.Context, k EnrollmentKey) error {
	return e.g.g.Call(ctx, "create enrollment key", func(ctx context.Context) error { return e.inner.CreateEnrollmentKey(ctx, k) }, contractError)
}

func (e *guardedEnroll) GetEnrollmentKey(ctx context.Context, id string) (EnrollmentKey, error) {
	return guard.Result(e.g.g, ctx, "get enrollment key", func(ctx context.Context) (EnrollmentKey, error) { return e.inner.GetEnrollmentKey(ctx, id) }, contractError)
}

func (e *guardedEnroll) ListEnrollmentKeys(ctx context.Context) ([]EnrollmentKey, error) {
	return guard.Result(e.g.g, ctx, "list enrollment keys", e.inner.ListEnrollmentKeys, contractError)
}

func (e *guardedEnroll) RevokeEnrollmentKey(ctx context.Context, id string, at time.Time) error {
	return e.g.g.Call(ctx, "revoke enrollment key", func(ctx context.Context) error { return e.inner.RevokeEnrollmentKey(ctx, id, at) }, contractError)
}

func (e *guardedEnroll) DeleteEnrollmentKey(ctx context.Context, id string) error {
	return e.g.g.Call(ctx, "delete enrollment key", func(ctx context.Context) error { return e.inner.DeleteEnrollmentKey(ctx, id) }, contractError)
}

func (e *guardedEnroll) JoinHost(ctx context.Context, keyID, digest string, h Host, now time.Time) (EnrollmentKey, error) {
	return guard.Result(e.g.g, ctx, "join host", func(ctx context.Context) (EnrollmentKey, error) { return e.inner.JoinHost(ctx, keyID, digest, h, now) }, contractError)
}
