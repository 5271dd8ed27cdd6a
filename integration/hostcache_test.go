package integration

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/internal/state"
)

// replicaClock is the clock two replicas share, moved by the test.
type replicaClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *replicaClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *replicaClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// twoReplicas returns two Authenticators on one database, as two replicas
// behind a load balancer, each with its own handle, sharing clock: on the
// memory store, SQLite and PostgreSQL.
func twoReplicas(t *testing.T, test func(t *testing.T, a, b *nmauth.Authenticator, sa nmauth.Store, clock *replicaClock)) {
	run := func(t *testing.T, sa, sb nmauth.Store) {
		clock := &replicaClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
		var auths [2]*nmauth.Authenticator
		for i, s := range []nmauth.Store{sa, sb} {
			a, err := nmauth.New(nmauth.Config{Store: s, Secrets: [][]byte{writesRoot}, ClientRate: -1, Now: clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := a.Shutdown(context.Background()); err != nil {
					t.Error(err)
				}
			})
			auths[i] = a
		}
		test(t, auths[0], auths[1], sa, clock)
	}
	t.Run("memory", func(t *testing.T) {
		s := nmauth.NewMemoryStore()
		run(t, s, s)
	})
	for _, b := range sqlBackends {
		t.Run(b.name, func(t *testing.T) {
			if b.dialect == nmauth.DialectPostgres {
				postgresDSN(t)
			}
			open := b.fresh(t)
			run(t, newSQLStore(t, open(t), b.dialect), newSQLStore(t, open(t), b.dialect))
		})
	}
}

// statusCacheTTL is Config.StatusCacheTTL's default, the bound within
// which one replica sees a change made on another.
const statusCacheTTL = 2 * time.Second

// warmHost creates the host id with secret through b and logs it in on a
// from address 1 until a's logins are granted without reading the Store
// (the first login writes the address and caches the host as its write
// leaves it, or the second reads the host known). It returns a token of
// the last login.
func warmHost(t *testing.T, a, b *nmauth.Authenticator, id, secret string) string {
	t.Helper()
	if err := b.Admin().CreateHost(context.Background(), id, "", secret); err != nil {
		t.Fatal(err)
	}
	var tok string
	for range 3 {
		got, err := a.LoginHost(fromAddr(1), id, "", secret)
		if err != nil {
			t.Fatalf("warm-up login: %v", err)
		}
		if err := a.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		tok = got.AuthToken
	}
	return tok
}

// TestHostCacheAcrossReplicas: a host whose logins replica A grants from
// its cache is refused by A, within StatusCacheTTL and ever after, once
// replica B disables it, deletes it or sets it a new secret; once B
// revokes its tokens, A's logins within that time get tokens that B
// refuses, and after it tokens that B accepts.
func TestHostCacheAcrossReplicas(t *testing.T) {
	changes := []struct {
		name   string
		change func(ad *nmauth.Admin, id string) error
		// refused is whether the host's logins with its old secret are
		// refused after the change.
		refused bool
	}{
		{"disable", func(ad *nmauth.Admin, id string) error { return ad.DisableHost(context.Background(), id) }, true},
		{"delete", func(ad *nmauth.Admin, id string) error { return ad.DeleteHost(context.Background(), id) }, true},
		{"new secret", func(ad *nmauth.Admin, id string) error {
			return ad.SetHostPassword(context.Background(), id, machineSecret(t))
		}, true},
		{"revoke", func(ad *nmauth.Admin, id string) error { return ad.RevokeHostTokens(context.Background(), id) }, false},
	}
	twoReplicas(t, func(t *testing.T, a, b *nmauth.Authenticator, _ nmauth.Store, clock *replicaClock) {
		for _, c := range changes {
			t.Run(c.name, func(t *testing.T) {
				id, secret := "cached-"+strings.ReplaceAll(c.name, " ", "-"), machineSecret(t)
				old := warmHost(t, a, b, id, secret)
				if err := c.change(b.Admin(), id); err != nil {
					t.Fatal(err)
				}
				if _, err := b.CheckBearer(context.Background(), old); !errors.Is(err, nmauth.ErrUnauthenticated) {
					t.Errorf("B's check of a token from before the change: %v", err)
				}
				// Within the bound, A may still answer from its cache; a
				// token it mints then is one B refuses.
				if got, err := a.LoginHost(fromAddr(1), id, "", secret); err == nil {
					if _, err := b.CheckBearer(context.Background(), got.AuthToken); !errors.Is(err, nmauth.ErrUnauthenticated) {
						t.Errorf("B's check of a token A minted within the bound: %v", err)
					}
				}
				clock.add(statusCacheTTL)
				for i := range 5 {
					got, err := a.LoginHost(fromAddr(1), id, "", secret)
					switch {
					case c.refused && !errors.Is(err, nmauth.ErrInvalidCredentials):
						t.Fatalf("login %d on A after the bound: %+v, %v; want refused", i, got, err)
					case !c.refused && err != nil:
						t.Fatalf("login %d on A after the bound: %v", i, err)
					case !c.refused:
						if _, err := b.CheckBearer(context.Background(), got.AuthToken); err != nil {
							t.Fatalf("B's check of A's token after the bound: %v", err)
						}
					}
					clock.add(statusCacheTTL / 3)
				}
			})
		}
	})
}

// TestHostCacheNewSecret: a secret set on replica B logs in on replica A
// at once, though A holds the old one's digest in its cache.
func TestHostCacheNewSecret(t *testing.T) {
	twoReplicas(t, func(t *testing.T, a, b *nmauth.Authenticator, _ nmauth.Store, _ *replicaClock) {
		secret := machineSecret(t)
		warmHost(t, a, b, "rotated", secret)
		fresh := machineSecret(t)
		if err := b.Admin().SetHostPassword(context.Background(), "rotated", fresh); err != nil {
			t.Fatal(err)
		}
		got, err := a.LoginHost(fromAddr(1), "rotated", "", fresh)
		if err != nil {
			t.Fatalf("login on A with the new secret: %v", err)
		}
		if _, err := b.CheckBearer(context.Background(), got.AuthToken); err != nil {
			t.Errorf("B's check of the token: %v", err)
		}
	})
}

// TestHostCacheCountsFailures: a wrong secret for a host that replica A
// grants from its cache is counted in the Store, and once its address has
// five failures, A throttles that address's right secret at once, as it
// does without a cache.
func TestHostCacheCountsFailures(t *testing.T) {
	twoReplicas(t, func(t *testing.T, a, b *nmauth.Authenticator, s nmauth.Store, _ *replicaClock) {
		secret := machineSecret(t)
		warmHost(t, a, b, "guessed", secret)
		if _, err := a.LoginHost(fromAddr(1), "guessed", "", machineSecret(t)); !errors.Is(err, nmauth.ErrInvalidCredentials) {
			t.Fatalf("wrong secret: %v", err)
		}
		if h, err := s.GetHost(context.Background(), "guessed"); err != nil || state.Of(h.State).PasswordFailures != 1 {
			t.Fatalf("stored failures %d, %v; want 1", state.Of(h.State).PasswordFailures, err)
		}
		if _, err := a.LoginHost(fromAddr(1), "guessed", "", secret); err != nil {
			t.Fatalf("right secret after one failure: %v", err)
		}
		if err := a.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if h, err := s.GetHost(context.Background(), "guessed"); err != nil || state.Of(h.State).PasswordFailures != 0 {
			t.Fatalf("stored failures %d, %v after a right login; want 0", state.Of(h.State).PasswordFailures, err)
		}
		for i := range 5 {
			if _, err := a.LoginHost(fromAddr(1), "guessed", "", machineSecret(t)); !errors.Is(err, nmauth.ErrInvalidCredentials) {
				t.Fatalf("wrong secret %d: %v", i, err)
			}
		}
		if _, err := a.LoginHost(fromAddr(1), "guessed", "", secret); !errors.Is(err, nmauth.ErrThrottled) {
			t.Errorf("right secret after five failures: %v; want throttled", err)
		}
	})
}
