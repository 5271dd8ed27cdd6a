package nmauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"testing"
	"time"
)

// statsAuth returns an Authenticator with the user alice and a token
// from alice's login, having checked that Stats reports nothing before
// any bearer check.
func statsAuth(t *testing.T, tweak func(*Config)) (*Authenticator, string) {
	t.Helper()
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	a := quickAuth(t, NewMemoryStore(), clock, tweak)
	if err := a.Admin().CreateUser(context.Background(), "alice", "right password"); err != nil {
		t.Fatal(err)
	}
	out, err := a.LoginUser(from("192.0.2.1"), "alice", "right password")
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Stats(); got != (Stats{}) {
		t.Fatalf("Stats before any bearer check = %+v; want zero", got)
	}
	return a, out.AuthToken
}

// TestStatsCaches checks the cache counts after a known sequence of
// bearer checks: the token cache takes a token on its second check, so
// the first two checks of a token miss it and later ones hit it; the
// status cache misses on the first check only; a credential that is not a
// cached token misses the token cache only; and a change to the account
// makes the next check read the Store again.
func TestStatsCaches(t *testing.T) {
	a, token := statsAuth(t, func(c *Config) { c.StatusCacheTTL = time.Minute })
	ctx := context.Background()
	for range 3 {
		if _, err := a.CheckBearer(ctx, token); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.CheckBearer(ctx, "not.a.token"); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("CheckBearer of a forgery: %v", err)
	}
	got := a.Stats()
	want := Stats{
		TokenCache:  CacheStats{Hits: 1, Misses: 3, Size: 1},
		StatusCache: CacheStats{Hits: 2, Misses: 1, Size: 1},
	}
	if got != want {
		t.Errorf("after 3 checks of a token and one forgery:\nStats = %+v\nwant    %+v", got, want)
	}

	if err := a.Admin().DisableUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CheckBearer(ctx, token); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("CheckBearer after DisableUser: %v", err)
	}
	got = a.Stats()
	want.TokenCache.Hits++
	want.StatusCache.Misses++
	if got != want {
		t.Errorf("after the account changed:\nStats = %+v\nwant    %+v", got, want)
	}
}

// TestStatsCachesDisabled checks that disabled caches report nothing,
// however many checks run.
func TestStatsCachesDisabled(t *testing.T) {
	a, token := statsAuth(t, func(c *Config) { c.TokenCacheSize = -1 })
	for range 3 {
		if _, err := a.CheckBearer(context.Background(), token); err != nil {
			t.Fatal(err)
		}
	}
	if got := a.Stats(); got != (Stats{}) {
		t.Errorf("Stats with both caches disabled = %+v; want zero", got)
	}
}

// TestStatsPasswordHashQueue holds the one hashing slot with a login whose
// hash does not finish, and checks the queue as two more logins wait for
// it; a fourth finds the queue full.
func TestStatsPasswordHashQueue(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	a := quickAuth(t, NewMemoryStore(), clock, func(c *Config) {
		c.PasswordHashConcurrency = 1
		c.PasswordHashQueue = 2
	})
	if err := a.Admin().CreateUser(context.Background(), "alice", "right password"); err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{}, 3)
	finish := make(chan struct{})
	a.hasher.ArgonKey = func(password, salt []byte, _, _ uint32, _ uint8, keyLen uint32) []byte {
		entered <- struct{}{}
		<-finish
		sum := sha256.Sum256(append(append([]byte{}, salt...), password...))
		return sum[:keyLen]
	}
	var logins sync.WaitGroup
	login := func() {
		logins.Add(1)
		go func() {
			defer logins.Done()
			if _, err := a.LoginUser(from("192.0.2.1"), "alice", "right password"); err != nil {
				t.Errorf("a login within the queue: %v", err)
			}
		}()
	}
	login()
	<-entered
	if got := a.Stats(); got.PasswordHashesRunning != 1 || got.PasswordHashesWaiting != 0 {
		t.Errorf("one login hashing: running %d, waiting %d; want 1, 0", got.PasswordHashesRunning, got.PasswordHashesWaiting)
	}
	login()
	login()
	// Both are admitted once they hold a ticket; the slot stays held, so
	// they wait.
	waitForTickets(a.hasher, 3)
	if got := a.Stats(); got.PasswordHashesRunning != 1 || got.PasswordHashesWaiting != 2 {
		t.Errorf("one login hashing, two queued: running %d, waiting %d; want 1, 2", got.PasswordHashesRunning, got.PasswordHashesWaiting)
	}
	if _, err := a.LoginUser(from("192.0.2.1"), "alice", "right password"); !errors.Is(err, ErrOverloaded) {
		t.Errorf("a login past the full queue: %v; want ErrOverloaded", err)
	}
	close(finish)
	logins.Wait()
	if got := a.Stats(); got.PasswordHashesRunning != 0 || got.PasswordHashesWaiting != 0 {
		t.Errorf("all logins done: running %d, waiting %d; want 0, 0", got.PasswordHashesRunning, got.PasswordHashesWaiting)
	}
}

// TestStatsAllocatesNothing: Stats may be read on every scrape.
func TestStatsAllocatesNothing(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	a := quickAuth(t, NewMemoryStore(), clock, func(c *Config) { c.StatusCacheTTL = time.Minute })
	if n := testing.AllocsPerRun(100, func() { _ = a.Stats() }); n != 0 {
		t.Errorf("Stats allocates %v times a call", n)
	}
}
