package storetest_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/storetest"
)

// countingStore is a custom Store: a MemoryStore that counts its user
// updates, standing in for an application's own backend.
type countingStore struct {
	*nmauth.MemoryStore
	updates atomic.Int64
}

func (s *countingStore) UpdateUser(ctx context.Context, name string, fn func(*nmauth.User) error) error {
	s.updates.Add(1)
	return s.MemoryStore.UpdateUser(ctx, name, fn)
}

// Run is called from a test of the Store's own package, with a function
// that returns a fresh empty store for each subtest. An example cannot
// take a *testing.T, so this one shows the test function and
// TestCustomStore below runs it.
func ExampleRun() {
	testCountingStore := func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) nmauth.Store {
			return &countingStore{MemoryStore: nmauth.NewMemoryStore()}
		})
	}
	_ = testCountingStore
}

// TestCustomStore runs the suite of ExampleRun, so that the store the
// example shows is proved to keep the contract.
func TestCustomStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) nmauth.Store {
		return &countingStore{MemoryStore: nmauth.NewMemoryStore()}
	})
}
