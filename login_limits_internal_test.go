package nmauth

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nmauth/nmauth/internal/attempt"
)

// TestConcurrentGuessesAreCounted: 40 wrong passwords at once from one
// address are all counted; only the free ones are evaluated (issue 14,
// finding 2, where all 40 were evaluated).
func TestConcurrentGuessesAreCounted(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	a := quickAuth(t, NewMemoryStore(), clock)
	if err := a.Admin().CreateUser(context.Background(), "alice", "right password"); err != nil {
		t.Fatal(err)
	}
	var wrong sync.WaitGroup
	var mu sync.Mutex
	counts := map[string]int{}
	for range 40 {
		wrong.Add(1)
		go func() {
			defer wrong.Done()
			_, err := a.LoginUser(from("198.51.100.1"), "alice", "wrong password")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, ErrThrottled):
				counts["429"]++
			case errors.Is(err, ErrInvalidCredentials):
				counts["401"]++
			default:
				counts[fmt.Sprint(err)]++
			}
		}()
	}
	wrong.Wait()
	if counts["401"] != attempt.ClientFreeFailures || counts["429"] != 40-attempt.ClientFreeFailures {
		t.Fatalf("answers %v, want %d × 401 and %d × 429", counts, attempt.ClientFreeFailures, 40-attempt.ClientFreeFailures)
	}
	u, _ := a.store.GetUser(context.Background(), "alice")
	if u.State.v.PasswordFailures != attempt.ClientFreeFailures {
		t.Fatalf("PasswordFailures = %d, want %d", u.State.v.PasswordFailures, attempt.ClientFreeFailures)
	}
}

// TestOwnerLogsInWhileAttackerHammers simulates an hour in which an
// attacker sends a wrong password every second from one address, while
// the owner logs in every 7 seconds from another (issue 14, finding 3:
// before, 0 of the owner's 505 logins succeeded). Hosts go the same way.
func TestOwnerLogsInWhileAttackerHammers(t *testing.T) {
	for _, kind := range []PrincipalKind{KindUser, KindHost} {
		t.Run(string(kind), func(t *testing.T) {
			clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
			a := quickAuth(t, NewMemoryStore(), clock)
			ctx := context.Background()
			login := func(ctx context.Context, password string) error {
				if kind == KindHost {
					_, err := a.LoginHost(ctx, "host-1", "", password)
					return err
				}
				_, err := a.LoginUser(ctx, "alice", password)
				return err
			}
			if err := a.Admin().CreateUser(ctx, "alice", "right password"); err != nil {
				t.Fatal(err)
			}
			if err := a.Admin().CreateHost(ctx, "host-1", "", "right password"); err != nil {
				t.Fatal(err)
			}
			owner, ownerOK, evaluated := 0, 0, 0
			for s := range 3600 {
				if err := login(from("203.0.113.9"), "wrong password"); errors.Is(err, ErrInvalidCredentials) {
					evaluated++
				}
				if s%7 == 0 {
					owner++
					if err := login(from("2001:db8:1:2::5"), "right password"); err == nil {
						ownerOK++
					}
				}
				clock.Advance(time.Second)
			}
			if ownerOK != owner {
				t.Errorf("owner logged in %d of %d times", ownerOK, owner)
			}
			// 5 free, then at most one per minute at the cap.
			if maxEvaluated := attempt.ClientFreeFailures + 3600/60 + 7; evaluated > maxEvaluated {
				t.Errorf("attacker had %d guesses evaluated, want at most %d", evaluated, maxEvaluated)
			}
		})
	}
}

// TestAccountCeiling: past the per-account ceiling, addresses that never
// logged in wait on the account, while the owner's known address does not.
func TestAccountCeiling(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	a := quickAuth(t, NewMemoryStore(), clock)
	ctx := context.Background()
	if err := a.Admin().CreateUser(ctx, "alice", "right password"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.LoginUser(from("192.0.2.1"), "alice", "right password"); err != nil {
		t.Fatal(err)
	}
	for i := range attempt.AccountCeiling {
		if _, err := a.LoginUser(from(fmt.Sprintf("10.0.%d.%d", i/200, i%200)), "alice", "wrong"); !errors.Is(err, ErrInvalidCredentials) {
			t.Fatalf("guess %d from a fresh address: %v", i, err)
		}
	}
	if _, err := a.LoginUser(from("10.9.9.9"), "alice", "right password"); !errors.Is(err, ErrThrottled) {
		t.Fatalf("a new address past the ceiling: %v, want ErrThrottled", err)
	}
	if _, err := a.LoginUser(from("192.0.2.1"), "alice", "right password"); err != nil {
		t.Fatalf("the owner's known address past the ceiling: %v", err)
	}
}
