package nmauth

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestLoginRacingPasswordChange: logins with the old password that race
// a password change get no token that survives it (issue 14, finding 1).
// Before, a login read the hash, checked it, and minted afterwards without
// looking again: tokens minted after the change stayed valid.
func TestLoginRacingPasswordChange(t *testing.T) {
	for round := range 5 {
		clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
		store := NewMemoryStore()
		a := quickAuth(t, store, clock)
		ctx := context.Background()
		if err := a.Admin().CreateUser(ctx, "alice", "old password 1"); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		tokens := make(chan string, 40)
		for i := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, err := a.LoginUser(from(fmt.Sprintf("192.0.2.%d", i)), "alice", "old password 1")
				if err == nil {
					tokens <- out.AuthToken
				}
			}()
		}
		if err := a.Admin().SetUserPassword(ctx, "alice", "new password 2"); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		close(tokens)
		for tok := range tokens {
			if _, err := a.CheckBearer(ctx, tok); !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("round %d: a token from a login with the old password survives the change: %v", round, err)
			}
		}
	}
}

// TestRevocationIgnoresClockSkew: a replica whose clock runs 3 s ahead
// mints tokens; every revoking change made through the other replica
// kills them, and a deleted and re-created account does not take them
// over (issue 14, finding 4: before, each of these tokens survived).
func TestRevocationIgnoresClockSkew(t *testing.T) {
	changes := map[string]func(*Authenticator) error{
		"password change": func(a *Authenticator) error {
			return a.Admin().SetUserPassword(context.Background(), "alice", "another password")
		},
		"revoke": func(a *Authenticator) error { return a.Admin().RevokeUserTokens(context.Background(), "alice") },
		"disable and enable": func(a *Authenticator) error {
			return errors.Join(a.Admin().DisableUser(context.Background(), "alice"), a.Admin().EnableUser(context.Background(), "alice"))
		},
		"delete and re-create": func(a *Authenticator) error {
			return errors.Join(a.Admin().DeleteUser(context.Background(), "alice"), a.Admin().CreateUser(context.Background(), "alice", "right password"))
		},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			store := NewMemoryStore()
			base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			behind := quickAuth(t, store, &fakeClock{now: base})
			ahead := quickAuth(t, store, &fakeClock{now: base, offset: 3 * time.Second})
			if err := behind.Admin().CreateUser(context.Background(), "alice", "right password"); err != nil {
				t.Fatal(err)
			}
			out, err := ahead.LoginUser(context.Background(), "alice", "right password")
			if err != nil {
				t.Fatal(err)
			}
			if err := change(behind); err != nil {
				t.Fatal(err)
			}
			for _, a := range []*Authenticator{behind, ahead} {
				if _, err := a.CheckBearer(context.Background(), out.AuthToken); !errors.Is(err, ErrUnauthenticated) {
					t.Errorf("token from the replica ahead after %s: %v, want ErrUnauthenticated", name, err)
				}
			}
		})
	}
}
