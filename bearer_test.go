package nmauth_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

// slowReadStore is a MemoryStore whose reads let other goroutines run
// between reading a record and returning it, as a database round trip
// does, so that a change can land while a read is on its way back.
type slowReadStore struct{ *nmauth.MemoryStore }

func (s slowReadStore) GetUser(ctx context.Context, name string) (nmauth.User, error) {
	u, err := s.MemoryStore.GetUser(ctx, name)
	for range 5 {
		runtime.Gosched()
	}
	return u, err
}

// TestDisableWinsOverConcurrentChecks disables users while many bearer
// checks of their tokens are under way, and requires that once the
// disable has returned no token of theirs is accepted, even though the
// status cache would trust what it read for an hour.
func TestDisableWinsOverConcurrentChecks(t *testing.T) {
	ctx := context.Background()
	store := slowReadStore{nmauth.NewMemoryStore()}
	f := newFixture(t, func(c *nmauth.Config) {
		c.Store = store
		c.StatusCacheTTL = time.Hour
	})
	const rounds, checkers = 50, 8
	stale := 0
	for i := range rounds {
		name := fmt.Sprintf("user-%03d", i)
		f.addUser(name, "password-"+name)
		token := f.userToken(name, "password-"+name)

		start := make(chan struct{})
		var wg sync.WaitGroup
		for range checkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, _ = f.auth.CheckBearer(ctx, token)
			}()
		}
		close(start)
		runtime.Gosched()
		if err := f.auth.Admin().DisableUser(ctx, name); err != nil {
			t.Fatalf("DisableUser(%q): %v", name, err)
		}
		wg.Wait()
		if _, err := f.auth.CheckBearer(ctx, token); !errors.Is(err, nmauth.ErrUnauthenticated) {
			stale++
		}
	}
	if stale > 0 {
		t.Errorf("after DisableUser returned, the token was still accepted in %d of %d rounds", stale, rounds)
	}
}

// TestStatusCacheFull checks more accounts than the status cache holds, and
// requires that a revocation still takes effect at once and that every
// other account is still accepted.
func TestStatusCacheFull(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, func(c *nmauth.Config) { c.StatusCacheSize = 16 })
	tokens := map[string]string{}
	for i := range 40 {
		name := fmt.Sprintf("user-%02d", i)
		f.addUser(name, "password-"+name)
		tokens[name] = f.userToken(name, "password-"+name)
	}
	for name, tok := range tokens {
		if _, err := f.auth.CheckBearer(ctx, tok); err != nil {
			t.Fatalf("CheckBearer(%s's token): %v", name, err)
		}
	}
	if err := f.auth.Admin().RevokeUserTokens(ctx, "user-07"); err != nil {
		t.Fatal(err)
	}
	for name, tok := range tokens {
		_, err := f.auth.CheckBearer(ctx, tok)
		if name == "user-07" {
			if !errors.Is(err, nmauth.ErrUnauthenticated) {
				t.Errorf("revoked token of %s: err = %v, want ErrUnauthenticated", name, err)
			}
		} else if err != nil {
			t.Errorf("CheckBearer(%s's token) = %v, want accepted", name, err)
		}
	}
}
