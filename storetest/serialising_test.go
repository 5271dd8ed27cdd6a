package storetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/storetest"
)

// jsonStore is a custom Store that keeps every record as the bytes
// encoding/json makes of it, as a store over a key-value database would:
// it never sees inside a record's State, which encodes itself.
type jsonStore struct {
	mu    sync.Mutex
	users map[string][]byte
	hosts map[string][]byte
}

func get[T any](ctx context.Context, s *jsonStore, m map[string][]byte, key string) (T, error) {
	var v T
	if err := ctx.Err(); err != nil {
		return v, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := m[key]
	if !ok {
		return v, nmauth.ErrNotFound
	}
	return v, json.Unmarshal(b, &v)
}

func list[T any](ctx context.Context, s *jsonStore, m map[string][]byte, after string, limit int) ([]T, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []T
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k <= after || len(out) >= limit {
			continue
		}
		var v T
		if err := json.Unmarshal(m[k], &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func create(ctx context.Context, s *jsonStore, m map[string][]byte, key string, v any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := m[key]; ok {
		return nmauth.ErrExists
	}
	m[key] = b
	return nil
}

func update[T any](ctx context.Context, s *jsonStore, m map[string][]byte, key string, fn func(*T) error, setKey func(*T)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := m[key]
	if !ok {
		return nmauth.ErrNotFound
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if err := fn(&v); err != nil {
		return err
	}
	setKey(&v)
	if b, err := json.Marshal(v); err != nil {
		return err
	} else {
		m[key] = b
	}
	return nil
}

func remove(ctx context.Context, s *jsonStore, m map[string][]byte, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(m, key)
	return nil
}

func (s *jsonStore) GetUser(ctx context.Context, name string) (nmauth.User, error) {
	return get[nmauth.User](ctx, s, s.users, name)
}
func (s *jsonStore) ListUsers(ctx context.Context, after string, limit int) ([]nmauth.User, error) {
	return list[nmauth.User](ctx, s, s.users, after, limit)
}
func (s *jsonStore) CreateUser(ctx context.Context, u nmauth.User) error {
	return create(ctx, s, s.users, u.Name, u)
}
func (s *jsonStore) UpdateUser(ctx context.Context, name string, fn func(*nmauth.User) error) error {
	return update(ctx, s, s.users, name, fn, func(u *nmauth.User) { u.Name = name })
}
func (s *jsonStore) DeleteUser(ctx context.Context, name string) error {
	return remove(ctx, s, s.users, name)
}
func (s *jsonStore) GetHost(ctx context.Context, id string) (nmauth.Host, error) {
	return get[nmauth.Host](ctx, s, s.hosts, id)
}
func (s *jsonStore) ListHosts(ctx context.Context, after string, limit int) ([]nmauth.Host, error) {
	return list[nmauth.Host](ctx, s, s.hosts, after, limit)
}
func (s *jsonStore) CreateHost(ctx context.Context, h nmauth.Host) error {
	return create(ctx, s, s.hosts, h.ID, h)
}
func (s *jsonStore) UpdateHost(ctx context.Context, id string, fn func(*nmauth.Host) error) error {
	return update(ctx, s, s.hosts, id, fn, func(h *nmauth.Host) { h.ID = id })
}
func (s *jsonStore) DeleteHost(ctx context.Context, id string) error {
	return remove(ctx, s, s.hosts, id)
}

// TestStoreKeepsStateAsText checks that a Store that keeps records as
// bytes, and sees nothing of a State but the text it encodes to, keeps
// the contract, State included (the suite stores every field of it, with
// times in other zones and a generation past the int64 range).
func TestStoreKeepsStateAsText(t *testing.T) {
	storetest.Run(t, func(t *testing.T) nmauth.Store {
		return &jsonStore{users: map[string][]byte{}, hosts: map[string][]byte{}}
	})
}

// TestStateRefusesBadText checks that a State that cannot be decoded is
// an error, not a silently empty State (which would reset an account's
// counters).
func TestStateRefusesBadText(t *testing.T) {
	var s nmauth.State
	for _, text := range []string{"", "{", `{"pf":"many"}`, "[]"} {
		if err := s.UnmarshalText([]byte(text)); err == nil {
			t.Errorf("UnmarshalText(%q) = nil, want an error", text)
		}
	}
	var u nmauth.User
	if err := json.Unmarshal([]byte(`{"Name":"alice","State":"{\"pf\":"}`), &u); err == nil || errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("a User whose State is damaged decodes: %v", err)
	}
}
