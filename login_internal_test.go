package nmauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock for one Authenticator; offset puts one
// replica ahead of another.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	offset time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now.Add(c.offset)
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// quickAuth returns an Authenticator over store whose password hash is a
// cheap stand-in for argon2id, so that a test can run hundreds of logins;
// the login path around the hash is the real one.
func quickAuth(t testing.TB, store Store, clock *fakeClock, tweak ...func(*Config)) *Authenticator {
	t.Helper()
	cfg := Config{Store: store, Secrets: [][]byte{benchSecret(1)}, Now: clock.Now, ClientRate: -1, StatusCacheTTL: -1}
	for _, fn := range tweak {
		fn(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.hasher.argonKey = func(password, salt []byte, _, _ uint32, _ uint8, keyLen uint32) []byte {
		sum := sha256.Sum256(append(append([]byte{}, salt...), password...))
		return sum[:keyLen]
	}
	return a
}

func from(addr string) context.Context {
	return WithClientAddr(context.Background(), netip.MustParseAddr(addr))
}

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
		if err := a.CreateUser(ctx, "alice", "old password 1"); err != nil {
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
		if err := a.SetUserPassword(ctx, "alice", "new password 2"); err != nil {
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

// TestConcurrentGuessesAreCounted: 40 wrong passwords at once from one
// address are all counted; only the free ones are evaluated (issue 14,
// finding 2, where all 40 were evaluated).
func TestConcurrentGuessesAreCounted(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	a := quickAuth(t, NewMemoryStore(), clock)
	if err := a.CreateUser(context.Background(), "alice", "right password"); err != nil {
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
	if counts["401"] != clientFreeFailures || counts["429"] != 40-clientFreeFailures {
		t.Fatalf("answers %v, want %d × 401 and %d × 429", counts, clientFreeFailures, 40-clientFreeFailures)
	}
	u, _ := a.store.GetUser(context.Background(), "alice")
	if u.PasswordFailures != clientFreeFailures {
		t.Fatalf("PasswordFailures = %d, want %d", u.PasswordFailures, clientFreeFailures)
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
			if err := a.CreateUser(ctx, "alice", "right password"); err != nil {
				t.Fatal(err)
			}
			if err := a.CreateHost(ctx, "host-1", "", "right password"); err != nil {
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
			if maxEvaluated := clientFreeFailures + 3600/60 + 7; evaluated > maxEvaluated {
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
	if err := a.CreateUser(ctx, "alice", "right password"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.LoginUser(from("192.0.2.1"), "alice", "right password"); err != nil {
		t.Fatal(err)
	}
	for i := range accountCeiling {
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

// TestRevocationIgnoresClockSkew: a replica whose clock runs 3 s ahead
// mints tokens; every revoking change made through the other replica
// kills them, and a deleted and re-created account does not take them
// over (issue 14, finding 4: before, each of these tokens survived).
func TestRevocationIgnoresClockSkew(t *testing.T) {
	changes := map[string]func(*Authenticator) error{
		"password change": func(a *Authenticator) error {
			return a.SetUserPassword(context.Background(), "alice", "another password")
		},
		"revoke": func(a *Authenticator) error { return a.RevokeUserTokens(context.Background(), "alice") },
		"disable and enable": func(a *Authenticator) error {
			return errors.Join(a.DisableUser(context.Background(), "alice"), a.EnableUser(context.Background(), "alice"))
		},
		"delete and re-create": func(a *Authenticator) error {
			return errors.Join(a.DeleteUser(context.Background(), "alice"), a.CreateUser(context.Background(), "alice", "right password"))
		},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			store := NewMemoryStore()
			base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			behind := quickAuth(t, store, &fakeClock{now: base})
			ahead := quickAuth(t, store, &fakeClock{now: base, offset: 3 * time.Second})
			if err := behind.CreateUser(context.Background(), "alice", "right password"); err != nil {
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

// TestMACPolicy: a changed MAC address is never a wrong credential (issue
// 9 item 3, issue 14 finding 11). By default it logs in and is audited;
// with RefuseMACChange it is refused with 403, and so is an omitted MAC
// when the host has one registered.
func TestMACPolicy(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		t.Run(fmt.Sprintf("refuse=%t", refuse), func(t *testing.T) {
			var events []EventType
			clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
			a := quickAuth(t, NewMemoryStore(), clock, func(c *Config) {
				c.RefuseMACChange = refuse
				c.OnEvent = func(_ context.Context, e Event) { events = append(events, e.Type) }
			})
			ctx := context.Background()
			if err := a.CreateHost(ctx, "host-1", "aa:bb:cc:dd:ee:01", "right password"); err != nil {
				t.Fatal(err)
			}
			for _, mac := range []string{"aa:bb:cc:dd:ee:02", ""} {
				events = nil
				_, err := a.LoginHost(ctx, "host-1", mac, "right password")
				switch {
				case errors.Is(err, ErrInvalidCredentials):
					t.Fatalf("MAC %q: answered as a wrong credential", mac)
				case refuse && !errors.Is(err, ErrForbidden):
					t.Errorf("MAC %q: %v, want ErrForbidden", mac, err)
				case !refuse && err != nil:
					t.Errorf("MAC %q: %v, want a login", mac, err)
				}
				want := EventLoginSucceeded
				if refuse {
					want = EventHostMACRefused
				} else if mac != "" && !slices.Contains(events, EventHostMACChanged) {
					t.Errorf("MAC %q: events %v, want %s", mac, events, EventHostMACChanged)
				}
				if !slices.Contains(events, want) {
					t.Errorf("MAC %q: events %v, want %s", mac, events, want)
				}
			}
			if _, err := a.LoginHost(ctx, "host-1", "aa:bb:cc:dd:ee:02", "wrong password"); !errors.Is(err, ErrInvalidCredentials) {
				t.Errorf("wrong password from another MAC: %v, want ErrInvalidCredentials", err)
			}
		})
	}
}

// TestHostUUIDsInOneCase: two spellings of one UUID are one host.
func TestHostUUIDsInOneCase(t *testing.T) {
	a := quickAuth(t, NewMemoryStore(), &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)})
	ctx := context.Background()
	const id = "0F8FAD5B-D9CB-469F-A165-70867728950E"
	if err := a.CreateHost(ctx, id, "", "right password"); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateHost(ctx, strings.ToLower(id), "", "right password"); !errors.Is(err, ErrExists) {
		t.Errorf("second host in lower case: %v, want ErrExists", err)
	}
	out, err := a.LoginHost(ctx, strings.ToLower(id), "", "right password")
	if err != nil || out.ID != strings.ToLower(id) {
		t.Errorf("login in lower case = %+v, %v", out, err)
	}
	// Ids that are not UUIDs keep their case.
	if got, _ := prepareHostID("Host-A"); got != "Host-A" {
		t.Errorf("prepareHostID(Host-A) = %q", got)
	}
}

// TestForwardedHops: hops with ports are read; a hop that is no address
// does not put the client in the proxy's bucket (issue 14, finding 10).
func TestForwardedHops(t *testing.T) {
	proxy := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	tests := []struct {
		xff  string
		want netip.Addr
	}{
		{"203.0.113.7:5678", netip.MustParseAddr("203.0.113.7")},
		{"[2001:db8::1]:443", netip.MustParseAddr("2001:db8::")},
		{"[2001:db8::1]", netip.MustParseAddr("2001:db8::")},
		{"198.51.100.1, 203.0.113.7:80", netip.MustParseAddr("203.0.113.7")},
		{"unknown", netip.Addr{}},
		{"203.0.113.7, unknown", netip.Addr{}},
	}
	for _, tc := range tests {
		r := httptest.NewRequest("POST", "/", nil)
		r.RemoteAddr = "127.0.0.1:40000"
		r.Header.Set("X-Forwarded-For", tc.xff)
		if got := clientAddr(r, proxy); got != tc.want {
			t.Errorf("X-Forwarded-For %q: client %v, want %v", tc.xff, got, tc.want)
		}
	}
}
