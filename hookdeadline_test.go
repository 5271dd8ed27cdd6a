package nmauth_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

// TestHooksUnderStoreDeadline: an application hook that hangs, ignoring
// its context, as a query to a paused database does, fails the login with
// a 503 at the Store deadline instead of holding it until the hook
// returns. Each hook here returns only once the login has answered.
func TestHooksUnderStoreDeadline(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	hang := func() { <-release }
	f := newFixture(t, func(c *nmauth.Config) {
		c.StoreTimeout = 100 * time.Millisecond
		c.SecondFactor = func(context.Context, nmauth.UserInfo) (bool, error) { hang(); return false, nil }
		c.NodeMember = func(_ context.Context, network, _ string) (bool, error) {
			if network == "open" {
				return true, nil
			}
			hang()
			return true, nil
		}
	})
	f.addUser("alice", "correct horse battery")
	f.addHost(testHostIDs[0], "", "host-password-1")
	// A host with a machine secret whose node login from its address is
	// granted from the cache of machine credentials, which reads no Store:
	// the hook still runs under the deadline.
	const machineSecret = "MFRGGZDFMZTWQ2LKNNWG23TPOBYXE43U"
	f.addHost(testHostIDs[1], "", machineSecret)
	fromHost := nmauth.WithClientAddr(context.Background(), netip.MustParseAddr("192.0.2.10"))
	for range 2 {
		if _, err := f.auth.LoginNode(fromHost, "open", testHostIDs[1], "", machineSecret); err != nil {
			t.Fatalf("LoginNode: %v", err)
		}
	}
	ctx := context.Background()
	for name, login := range map[string]func() error{
		"SecondFactor": func() error { _, err := f.auth.LoginUser(ctx, "alice", "correct horse battery"); return err },
		"NodeMember": func() error {
			_, err := f.auth.LoginNode(ctx, "net-1", testHostIDs[0], "", "host-password-1")
			return err
		},
		"NodeMember, cached machine secret": func() error {
			_, err := f.auth.LoginNode(fromHost, "net-1", testHostIDs[1], "", machineSecret)
			return err
		},
	} {
		done := make(chan error, 1)
		go func() { done <- login() }()
		select {
		case err := <-done:
			if !errors.Is(err, nmauth.ErrStoreUnavailable) {
				t.Errorf("%s hanging: login error %v, want ErrStoreUnavailable", name, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s hanging: the login waits for the hook", name)
		}
	}
}

// stuckStore is a Store whose updates hang until their context ends, as
// on a paused database; it notes when each began and the deadline each
// was given.
type stuckStore struct {
	*nmauth.MemoryStore
	began     chan string
	deadlines chan time.Time
}

func (s *stuckStore) UpdateUser(ctx context.Context, name string, fn func(*nmauth.User) error) error {
	d, _ := ctx.Deadline()
	s.deadlines <- d
	s.began <- name
	<-ctx.Done()
	return ctx.Err()
}

// TestLoginDeadlineStartsWithItsTurn: a login that queues for the hashing
// slot behind a login stuck in the Store gets the whole Store deadline
// once its turn comes (DESIGN.md: deadlines count from when the work
// starts), rather than what its wait left of one counted from its
// arrival; the queue's timeout bounds the wait.
func TestLoginDeadlineStartsWithItsTurn(t *testing.T) {
	const timeout = 300 * time.Millisecond
	store := &stuckStore{MemoryStore: nmauth.NewMemoryStore(), began: make(chan string, 4), deadlines: make(chan time.Time, 4)}
	f := newFixture(t, func(c *nmauth.Config) {
		c.Store = store
		c.StoreTimeout = timeout
		c.PasswordHashConcurrency = 1
	})
	f.addUser("alice", "correct horse battery")
	f.addUser("bob", "battery staple horse")
	ctx := context.Background()
	first := make(chan error, 1)
	go func() { _, err := f.auth.LoginUser(ctx, "alice", "correct horse battery"); first <- err }()
	<-store.began // alice holds the hashing slot, stuck in the Store
	alice := <-store.deadlines
	_, err := f.auth.LoginUser(ctx, "bob", "battery staple horse")
	if !errors.Is(err, nmauth.ErrStoreUnavailable) {
		t.Fatalf("bob's login behind a stuck one, stuck in turn: %v, want ErrStoreUnavailable", err)
	}
	// bob's turn came when alice's login gave up its slot, at her
	// deadline or later: his Store call had a whole deadline from then.
	if bob := <-store.deadlines; bob.Before(alice.Add(timeout)) {
		t.Errorf("bob's Store deadline was %s after alice's; want at least the whole %s from when his turn came",
			bob.Sub(alice).Round(time.Millisecond), timeout)
	}
	if err := <-first; !errors.Is(err, nmauth.ErrStoreUnavailable) {
		t.Errorf("alice's login, stuck: %v, want ErrStoreUnavailable", err)
	}
}
