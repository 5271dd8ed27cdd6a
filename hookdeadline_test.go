package nmauth_test

import (
	"context"
	"errors"
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
		c.NodeMember = func(context.Context, string, string) (bool, error) { hang(); return true, nil }
	})
	f.addUser("alice", "correct horse battery")
	f.addHost(testHostIDs[0], "", "host-password-1")
	ctx := context.Background()
	for name, login := range map[string]func() error{
		"SecondFactor": func() error { _, err := f.auth.LoginUser(ctx, "alice", "correct horse battery"); return err },
		"NodeMember":   func() error { _, err := f.auth.LoginNode(ctx, "net-1", testHostIDs[0], "", "host-password-1"); return err },
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
