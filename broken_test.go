package nmauth_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/nmauth/nmauth"
)

// brokenStore is a custom Store, over the memory store, that holds one
// user it cannot decode and says so as the Store contract asks: a
// *BrokenRecordError for reads and updates, a marked record in listings.
type brokenStore struct {
	*nmauth.MemoryStore
	name string
}

func (s *brokenStore) broken() error {
	return &nmauth.BrokenRecordError{Kind: "user", Key: s.name, Column: "profile", Err: errors.New("unexpected end of input")}
}

func (s *brokenStore) GetUser(ctx context.Context, name string) (nmauth.User, error) {
	if name == s.name {
		return nmauth.User{}, s.broken()
	}
	return s.MemoryStore.GetUser(ctx, name)
}

func (s *brokenStore) UpdateUser(ctx context.Context, name string, fn func(*nmauth.User) error) error {
	if name == s.name {
		return s.broken()
	}
	return s.MemoryStore.UpdateUser(ctx, name, fn)
}

func (s *brokenStore) ListUsers(ctx context.Context, after string, limit int) ([]nmauth.User, error) {
	users, err := s.MemoryStore.ListUsers(ctx, after, limit)
	for i := range users {
		if users[i].Name == s.name {
			users[i] = nmauth.User{Name: s.name, Broken: []string{"profile"}}
		}
	}
	return users, err
}

// TestCustomStoreBrokenRecord: a custom Store's broken record answers
// 500 for its own account, logged once with the account and the column,
// and nothing else: its neighbour logs in, the listing answers and marks
// it, the root-secret check and readiness pass.
func TestCustomStoreBrokenRecord(t *testing.T) {
	store := &brokenStore{MemoryStore: nmauth.NewMemoryStore()}
	var logs bytes.Buffer
	f := newFixture(t, func(c *nmauth.Config) {
		c.Store = store
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))
	})
	f.addUser("alice", "correct horse battery")
	f.addUser("bob", "bob's long password")
	store.name = "bob"
	ctx := context.Background()

	r := f.loginUser("bob", "bob's long password")
	wantStatus(t, r, http.StatusInternalServerError)
	if n := strings.Count(logs.String(), `bob`); n != 1 || !strings.Contains(logs.String(), "profile") {
		t.Errorf("log names bob %d times, want one line naming bob and the column:\n%s", n, logs.String())
	}
	if err := f.auth.Admin().DisableUser(ctx, "bob"); !errors.Is(err, nmauth.ErrBrokenRecord) || !errors.Is(err, nmauth.ErrDataFault) || errors.Is(err, nmauth.ErrStoreUnavailable) {
		t.Errorf("DisableUser(bob) = %v, want ErrBrokenRecord, a data fault", err)
	}
	wantStatus(t, f.loginUser("alice", "correct horse battery"), http.StatusOK)

	users, err := f.auth.Admin().ListUsers(ctx, "", 10)
	if err != nil || len(users) != 2 || !slices.Equal(users[1].Broken, []string{"profile"}) || users[0].Broken != nil {
		t.Fatalf("ListUsers = %+v, %v; want alice sound and bob marked broken", users, err)
	}
	if err := f.auth.CheckSecrets(ctx); err != nil {
		t.Errorf("CheckSecrets: %v", err)
	}
	if err := f.auth.Ready(ctx); err != nil {
		t.Errorf("Ready: %v", err)
	}
	// The memory store cannot repair, and says so.
	if _, err := f.auth.Admin().BrokenRecords(ctx); !errors.Is(err, nmauth.ErrRepairUnsupported) {
		t.Errorf("BrokenRecords on a store without RepairStore = %v, want ErrRepairUnsupported", err)
	}
}
