package nmauth_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

// faultyStore wraps a Store and, once broken, makes every call fail or
// hang until its context ends, or beyond it when deaf: a database that is
// down, locked or slow.
type faultyStore struct {
	nmauth.Store
	mu   sync.Mutex
	mode string // "", "fail", "hang", "deaf"
	deaf chan struct{}
}

var errDiskOnFire = errors.New("disk on fire")

func (s *faultyStore) fault(ctx context.Context) error {
	s.mu.Lock()
	mode := s.mode
	s.mu.Unlock()
	switch mode {
	case "fail":
		return errDiskOnFire
	case "hang":
		<-ctx.Done()
		return ctx.Err()
	case "deaf":
		<-s.deaf // ignores its context, as a stuck driver might
		return errDiskOnFire
	}
	return nil
}

func (s *faultyStore) break_(mode string) {
	s.mu.Lock()
	s.mode = mode
	s.mu.Unlock()
}

func (s *faultyStore) GetUser(ctx context.Context, name string) (nmauth.User, error) {
	if err := s.fault(ctx); err != nil {
		return nmauth.User{}, err
	}
	return s.Store.GetUser(ctx, name)
}

func (s *faultyStore) UpdateUser(ctx context.Context, name string, fn func(*nmauth.User) error) error {
	if err := s.fault(ctx); err != nil {
		return err
	}
	return s.Store.UpdateUser(ctx, name, fn)
}

func (s *faultyStore) GetHost(ctx context.Context, id string) (nmauth.Host, error) {
	if err := s.fault(ctx); err != nil {
		return nmauth.Host{}, err
	}
	return s.Store.GetHost(ctx, id)
}

func (s *faultyStore) UpdateHost(ctx context.Context, id string, fn func(*nmauth.Host) error) error {
	if err := s.fault(ctx); err != nil {
		return err
	}
	return s.Store.UpdateHost(ctx, id, fn)
}

// faultFixture is a fixture over a store that can be broken.
func faultFixture(t *testing.T, store nmauth.Store, logs *bytes.Buffer) *fixture {
	t.Helper()
	return newFixture(t, func(c *nmauth.Config) {
		c.Store = store
		c.StoreTimeout = 100 * time.Millisecond
		if logs == nil {
			logs = &bytes.Buffer{}
		}
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
}

// wantNoCredentialVerdict is the netclient rule: a right password is
// never answered 401 (netclient drops its configuration on a 401). A store
// fault is 503 with Retry-After, for right and wrong passwords alike.
func wantUnavailable(t *testing.T, r reply) {
	t.Helper()
	wantError(t, r, http.StatusServiceUnavailable)
	if r.header.Get("Retry-After") == "" {
		t.Fatalf("503 without Retry-After: %v", r.header)
	}
}

// wantRecovered retries a login with a right password until it is
// answered 200, for at most 10 seconds; every answer before that must be
// a proper 503.
func wantRecovered(t *testing.T, login func() reply) {
	t.Helper()
	for start := time.Now(); ; {
		r := login()
		if r.status == http.StatusOK {
			return
		}
		wantUnavailable(t, r)
		if time.Since(start) > 10*time.Second {
			t.Fatalf("still 503 %v after the fault was removed", time.Since(start).Round(time.Millisecond))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func hostLogin(f *fixture, password string) reply {
	return f.do("/api/hosts/adm/authenticate", "", map[string]string{"id": "host-1", "password": password})
}

// TestStoreFaults: a store that fails, hangs past the deadline or ignores
// its context is answered 503 with Retry-After within the deadline, for
// right and wrong passwords alike, on every route that reads it (issue
// 11: before, 500 without Retry-After, or a wait of the whole lock).
func TestStoreFaults(t *testing.T) {
	for _, mode := range []string{"fail", "hang", "deaf"} {
		t.Run(mode, func(t *testing.T) {
			store := &faultyStore{Store: nmauth.NewMemoryStore(), deaf: make(chan struct{})}
			t.Cleanup(func() { close(store.deaf) })
			f := faultFixture(t, store, nil)
			f.addUser("alice", "correct horse battery")
			f.addHost("host-1", "", "host-password-1")
			token := f.userToken("alice", "correct horse battery")
			store.break_(mode)
			wantUnavailable(t, hostLogin(f, "host-password-1"))
			wantUnavailable(t, hostLogin(f, "wrong password"))
			wantUnavailable(t, f.loginUser("alice", "correct horse battery"))
			wantUnavailable(t, f.loginUser("alice", "wrong password"))
			wantUnavailable(t, f.do("/api/users/alice/auth/init-totp", token, nil))
			if err := f.auth.Ready(context.Background()); !errors.Is(err, nmauth.ErrStoreUnavailable) {
				t.Errorf("Ready = %v, want ErrStoreUnavailable", err)
			}
			store.break_("")
			// A login has 100 ms here for its Store calls, which a busy
			// machine can miss: a retry on a proper 503 gets in.
			wantRecovered(t, func() reply { return hostLogin(f, "host-password-1") })
			if err := f.auth.Ready(context.Background()); err != nil {
				t.Errorf("Ready after the fault = %v", err)
			}
		})
	}
}

// TestMalformedHostHashIsAServerFault: a host whose stored hash is
// malformed gets 500 and an error log naming it, never 401 (issue 11:
// before, 401 and no log, and netclient dropped the host).
func TestMalformedHostHashIsAServerFault(t *testing.T) {
	var logs bytes.Buffer
	store := nmauth.NewMemoryStore()
	f := faultFixture(t, store, &logs)
	f.addHost("host-1", "", "host-password-1")
	if err := store.UpdateHost(context.Background(), "host-1", func(h *nmauth.Host) error {
		h.PasswordHash = "$argon2id$v=19$m=19456,t=2,p=1$garbage"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wantError(t, hostLogin(f, "host-password-1"), http.StatusInternalServerError)
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "host-1") || strings.Contains(logs.String(), "garbage") {
		t.Errorf("log %q: want an error naming host-1 and not the hash", logs.String())
	}
}

// TestStoreErrorsLoggedAtABoundedRate: a store down under load logs one
// line per second with the count of lines left out.
func TestStoreErrorsLoggedAtABoundedRate(t *testing.T) {
	var logs bytes.Buffer
	store := &faultyStore{Store: nmauth.NewMemoryStore()}
	f := faultFixture(t, store, &logs)
	f.addUser("alice", "correct horse battery")
	store.break_("fail")
	for range 50 {
		f.auth.Ready(context.Background())
	}
	f.clock.Advance(2 * time.Second)
	f.auth.Ready(context.Background())
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "not_logged_since_last=49") {
		t.Fatalf("log lines %q, want 2, the second counting 49 left out", lines)
	}
}
