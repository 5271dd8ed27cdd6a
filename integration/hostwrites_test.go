package integration

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/internal/state"
)

// gatedStore holds every batch of host writes while gate is locked, so
// that a test can change a host between a login's read and its write.
type gatedStore struct {
	nmauth.Store
	batch   nmauth.HostBatchStore
	gate    sync.Mutex
	batches int
}

func (s *gatedStore) UpdateHosts(ctx context.Context, updates []nmauth.HostUpdate) error {
	s.gate.Lock()
	s.batches++
	s.gate.Unlock()
	return s.batch.UpdateHosts(ctx, updates)
}

// batchStores runs test on the memory store, SQLite and PostgreSQL.
func batchStores(t *testing.T, test func(t *testing.T, s nmauth.Store)) {
	t.Run("memory", func(t *testing.T) { test(t, nmauth.NewMemoryStore()) })
	for _, b := range sqlBackends {
		t.Run(b.name, func(t *testing.T) {
			if b.dialect == nmauth.DialectPostgres {
				postgresDSN(t)
			}
			test(t, newSQLStore(t, b.fresh(t)(t), b.dialect))
		})
	}
}

func machineSecret(t *testing.T) string {
	t.Helper()
	raw := make([]byte, 20)
	rand.Read(raw)
	return base32.StdEncoding.EncodeToString(raw)
}

func fromAddr(i int) context.Context {
	return nmauth.WithClientAddr(context.Background(), netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}))
}

var (
	writesRoot    = []byte("host-writes-test-root-secret-0123456789")
	writesOldRoot = []byte("host-writes-test-older-root-secret-012345")
)

func newGatedAuth(t *testing.T, s nmauth.Store, queue int) (*nmauth.Authenticator, *gatedStore) {
	t.Helper()
	g := &gatedStore{Store: s, batch: s.(nmauth.HostBatchStore)}
	a, err := nmauth.New(nmauth.Config{Store: g, Secrets: [][]byte{writesRoot, writesOldRoot},
		ClientRate: -1, HostWriteQueue: queue})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return a, g
}

// knownTo reports whether the host holds client as a known address, with
// no failures.
func knownTo(t *testing.T, s nmauth.Store, id string, i int) bool {
	t.Helper()
	h, err := s.GetHost(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	client := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).String()
	return slices.Contains(state.Of(h.State).PasswordClients, state.Client{Client: client, Known: true})
}

// TestHostWritesBatched: the first logins of 300 hosts, each from its own
// address, 16 at a time, are all recorded once Shutdown returns, and a
// host's failures are forgotten by its right login; no batch writes a
// host that a login did not write.
func TestHostWritesBatched(t *testing.T) {
	batchStores(t, func(t *testing.T, s nmauth.Store) {
		a, g := newGatedAuth(t, s, 0)
		const n = 300
		secrets := make([]string, n)
		for i := range secrets {
			secrets[i] = machineSecret(t)
			if err := a.Admin().CreateHost(context.Background(), fmt.Sprintf("host-%03d", i), "", secrets[i]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := a.LoginHost(fromAddr(9999), "host-000", "", machineSecret(t)); !errors.Is(err, nmauth.ErrInvalidCredentials) {
			t.Fatalf("wrong secret: %v", err)
		}
		var wg sync.WaitGroup
		errs := make([]error, n)
		for w := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += 16 {
					_, errs[i] = a.LoginHost(fromAddr(i), fmt.Sprintf("host-%03d", i), "", secrets[i])
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if err := a.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if id := fmt.Sprintf("host-%03d", i); !knownTo(t, s, id, i) {
				t.Errorf("%s: its login's address is not recorded", id)
			}
		}
		if h, _ := s.GetHost(context.Background(), "host-000"); state.Of(h.State).PasswordFailures != 0 {
			t.Errorf("host-000 keeps %d failures after a right login", state.Of(h.State).PasswordFailures)
		}
		if g.batches == 0 || g.batches >= n {
			t.Errorf("%d batches for %d writes", g.batches, n)
		}
	})
}

// TestHostWritesAfterChange: a disable, a new secret and a revocation made
// between a login's read and its batched write end the login's token, and
// the write undoes neither the disable nor the new secret. A failure
// counted meanwhile is not forgotten by the write.
func TestHostWritesAfterChange(t *testing.T) {
	batchStores(t, func(t *testing.T, s nmauth.Store) {
		a, g := newGatedAuth(t, s, 0)
		// older made its hosts' digests under the older root secret
		// alone, which a's logins move under the first.
		older, err := nmauth.New(nmauth.Config{Store: s, Secrets: [][]byte{writesOldRoot}, ClientRate: -1})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		cases := []struct {
			name   string
			change func(id string) error
			// recorded is whether the write still applies: the secret
			// checked is still stored and the host is not disabled.
			recorded bool
			// rotated makes the host's digest under the older root
			// secret, so that the login's write moves it.
			rotated bool
		}{
			{"disable", func(id string) error { return a.Admin().DisableHost(ctx, id) }, false, false},
			{"new secret", func(id string) error { return a.Admin().SetHostPassword(ctx, id, machineSecret(t)) }, false, false},
			{"new secret over a digest to move", func(id string) error { return a.Admin().SetHostPassword(ctx, id, machineSecret(t)) }, false, true},
			{"disable of a digest to move", func(id string) error { return a.Admin().DisableHost(ctx, id) }, false, true},
			{"revoke", func(id string) error { return a.Admin().RevokeHostTokens(ctx, id) }, true, false},
			{"failure counted", func(id string) error {
				_, err := a.LoginHost(fromAddr(500), id, "", machineSecret(t))
				if !errors.Is(err, nmauth.ErrInvalidCredentials) {
					return fmt.Errorf("wrong secret: %v", err)
				}
				return nil
			}, true, false},
		}
		for i, c := range cases {
			id := fmt.Sprintf("changed-%d", i)
			secret := machineSecret(t)
			maker := a
			if c.rotated {
				maker = older
			}
			if err := maker.Admin().CreateHost(ctx, id, "", secret); err != nil {
				t.Fatal(err)
			}
			// One failure before, which the right login would forget.
			if _, err := a.LoginHost(fromAddr(400), id, "", machineSecret(t)); !errors.Is(err, nmauth.ErrInvalidCredentials) {
				t.Fatal(err)
			}
			g.gate.Lock()
			got, err := a.LoginHost(fromAddr(i), id, "", secret)
			if err != nil {
				g.gate.Unlock()
				t.Fatalf("%s: login: %v", c.name, err)
			}
			err = c.change(id)
			before, _ := s.GetHost(ctx, id)
			g.gate.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			after, err := s.GetHost(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if after.Disabled != before.Disabled || after.PasswordHash != before.PasswordHash || state.Of(after.State).Generation != state.Of(before.State).Generation {
				t.Errorf("%s: the batched write changed the host: disabled %v → %v, generation %d → %d, hash changed %v",
					c.name, before.Disabled, after.Disabled, state.Of(before.State).Generation, state.Of(after.State).Generation, after.PasswordHash != before.PasswordHash)
			}
			if known := knownTo(t, s, id, i); known != c.recorded {
				t.Errorf("%s: address recorded %v, want %v", c.name, known, c.recorded)
			}
			_, err = a.CheckBearer(ctx, got.AuthToken)
			if ended := c.name != "failure counted"; ended != (err != nil) {
				t.Errorf("%s: the login's token: %v", c.name, err)
			}
			if c.name == "failure counted" && state.Of(after.State).PasswordFailures != 2 {
				t.Errorf("%s: %d failures stored, want the 2 counted", c.name, state.Of(after.State).PasswordFailures)
			}
		}
	})
}

// TestHostWritesFullQueue: with room for two queued writes and the batches
// held, the other logins make their writes before they answer, and once
// the batches go on every login is recorded.
func TestHostWritesFullQueue(t *testing.T) {
	batchStores(t, func(t *testing.T, s nmauth.Store) {
		a, g := newGatedAuth(t, s, 2)
		ctx := context.Background()
		const n = 10
		secrets := make([]string, n)
		for i := range secrets {
			secrets[i] = machineSecret(t)
			if err := a.Admin().CreateHost(ctx, fmt.Sprintf("full-%d", i), "", secrets[i]); err != nil {
				t.Fatal(err)
			}
		}
		g.gate.Lock()
		for i := range n {
			if _, err := a.LoginHost(fromAddr(i), fmt.Sprintf("full-%d", i), "", secrets[i]); err != nil {
				g.gate.Unlock()
				t.Fatal(err)
			}
		}
		written := 0
		for i := range n {
			if knownTo(t, s, fmt.Sprintf("full-%d", i), i) {
				written++
			}
		}
		g.gate.Unlock()
		if written < n-2 {
			t.Errorf("%d of %d logins written while the queue was full, want at least %d", written, n, n-2)
		}
		if err := a.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if id := fmt.Sprintf("full-%d", i); !knownTo(t, s, id, i) {
				t.Errorf("%s: its login's address is not recorded", id)
			}
		}
	})
}

// TestShutdownWaitsForWrites: Shutdown does not return while a login's
// write waits for the Store, but at its context's end, with an error; once
// the Store takes the write, it returns nil with the write made.
func TestShutdownWaitsForWrites(t *testing.T) {
	batchStores(t, func(t *testing.T, s nmauth.Store) {
		a, g := newGatedAuth(t, s, 0)
		secret := machineSecret(t)
		if err := a.Admin().CreateHost(context.Background(), "held", "", secret); err != nil {
			t.Fatal(err)
		}
		g.gate.Lock()
		if _, err := a.LoginHost(fromAddr(1), "held", "", secret); err != nil {
			g.gate.Unlock()
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		err := a.Shutdown(ctx)
		g.gate.Unlock()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown while the write is held = %v, want the context's end", err)
		}
		if err := a.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !knownTo(t, s, "held", 1) {
			t.Error("the login's address is not recorded after Shutdown")
		}
	})
}

// seedStore counts the host reads that reach the Store, holds the read of
// one host while hold is set, holds every batch of host writes while gate
// is locked, and fails every batch while failBatches is set.
type seedStore struct {
	nmauth.Store
	batch       nmauth.HostBatchStore
	gate        sync.Mutex
	reads       atomic.Int64
	tries       atomic.Int64
	failBatches atomic.Bool
	// hold, when set, is the host whose reads wait for release, after
	// reading is closed.
	hold             string
	reading, release chan struct{}
}

func (s *seedStore) GetHost(ctx context.Context, id string) (nmauth.Host, error) {
	s.reads.Add(1)
	if id == s.hold {
		close(s.reading)
		<-s.release
	}
	return s.Store.GetHost(ctx, id)
}

func (s *seedStore) UpdateHosts(ctx context.Context, updates []nmauth.HostUpdate) error {
	s.gate.Lock()
	defer s.gate.Unlock()
	s.tries.Add(1)
	if s.failBatches.Load() {
		return errors.New("disk full")
	}
	return s.batch.UpdateHosts(ctx, updates)
}

func newSeedAuth(t *testing.T, s nmauth.Store, tweak func(*nmauth.Config)) (*nmauth.Authenticator, *seedStore) {
	t.Helper()
	w := &seedStore{Store: s, batch: s.(nmauth.HostBatchStore)}
	cfg := nmauth.Config{Store: w, Secrets: [][]byte{writesRoot, writesOldRoot}, ClientRate: -1}
	if tweak != nil {
		tweak(&cfg)
	}
	a, err := nmauth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.failBatches.Store(false)
		if err := a.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return a, w
}

// TestHostWriteSeedsCache: while the write of a host's first login from
// an address waits for its batch, the host's next logins from that
// address, with its secret, read no Store and take no turn at the host
// gate: they are granted while another host's login holds the gate's only
// turn and the gate queues none, which refuses a login from a new
// address. So is a host whose digest the write moves under the first
// root secret. Once the batch goes on, the address is recorded.
func TestHostWriteSeedsCache(t *testing.T) {
	batchStores(t, func(t *testing.T, s nmauth.Store) {
		a, w := newSeedAuth(t, s, func(c *nmauth.Config) { c.HostLoginConcurrency, c.HostLoginQueue = 1, -1 })
		older, err := nmauth.New(nmauth.Config{Store: s, Secrets: [][]byte{writesOldRoot}, ClientRate: -1})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		secrets := map[string]string{"seeded": machineSecret(t), "moved": machineSecret(t), "blocker": machineSecret(t)}
		for id, secret := range secrets {
			maker := a
			if id == "moved" {
				maker = older
			}
			if err := maker.Admin().CreateHost(ctx, id, "", secret); err != nil {
				t.Fatal(err)
			}
		}
		oldDigest, _ := s.GetHost(ctx, "moved")
		w.gate.Lock()
		for i, id := range []string{"seeded", "moved"} {
			if _, err := a.LoginHost(fromAddr(i+1), id, "", secrets[id]); err != nil {
				w.gate.Unlock()
				t.Fatalf("%s: first login: %v", id, err)
			}
		}
		w.hold, w.reading, w.release = "blocker", make(chan struct{}), make(chan struct{})
		blocked := make(chan error, 1)
		go func() {
			_, err := a.LoginHost(fromAddr(9), "blocker", "", secrets["blocker"])
			blocked <- err
		}()
		<-w.reading
		reads := w.reads.Load()
		tokens := map[string]string{}
		for i, id := range []string{"seeded", "moved"} {
			for n := range 3 {
				got, err := a.LoginHost(fromAddr(i+1), id, "", secrets[id])
				if err != nil {
					t.Errorf("%s: login %d from the first login's address while the gate is full: %v", id, n+2, err)
					continue
				}
				tokens[id] = got.AuthToken
			}
		}
		if n := w.reads.Load() - reads; n != 0 {
			t.Errorf("the logins after the first read the Store %d times, want 0", n)
		}
		for id, tok := range tokens {
			if p, err := a.CheckBearer(ctx, tok); err != nil || p.Name != id {
				t.Errorf("%s: its token: %+v, %v", id, p, err)
			}
		}
		if _, err := a.LoginHost(fromAddr(7), "seeded", "", secrets["seeded"]); !errors.Is(err, nmauth.ErrOverloaded) {
			t.Errorf("login from a new address while the gate is full: %v, want overloaded", err)
		}
		close(w.release)
		w.gate.Unlock()
		if err := <-blocked; err != nil {
			t.Fatalf("the login that held the gate: %v", err)
		}
		if err := a.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if !knownTo(t, s, "seeded", 1) || !knownTo(t, s, "moved", 2) {
			t.Error("a first login's address is not recorded")
		}
		if moved, _ := s.GetHost(ctx, "moved"); moved.PasswordHash == oldDigest.PasswordHash {
			t.Error("the moved host's digest is not moved")
		}
		// The moved digest, seeded, checks the secret, and only it.
		if _, err := a.LoginHost(fromAddr(2), "moved", "", machineSecret(t)); !errors.Is(err, nmauth.ErrInvalidCredentials) {
			t.Errorf("wrong secret of the moved host: %v", err)
		}
		if _, err := a.LoginHost(fromAddr(2), "moved", "", secrets["moved"]); err != nil {
			t.Errorf("the moved host's secret: %v", err)
		}
	})
}

// TestHostWriteNotMadeEndsCache: when the write of a host's first login
// from an address is not made as the login read the host, because of a
// change made between the login and its batch on another Authenticator
// over the same Store (a disable, a deletion, a new secret, a failure
// counted), or because the Store does not take the batch, the host's next
// login from that address reads the Store at once, within
// StatusCacheTTL: a disabled, deleted or re-keyed host is refused, and a
// failure counted is kept.
func TestHostWriteNotMadeEndsCache(t *testing.T) {
	batchStores(t, func(t *testing.T, s nmauth.Store) {
		a, w := newSeedAuth(t, s, nil)
		b, err := nmauth.New(nmauth.Config{Store: s, Secrets: [][]byte{writesRoot}, ClientRate: -1})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		cases := []struct {
			name    string
			change  func(id string) error
			refused bool
		}{
			{"disable", func(id string) error { return b.Admin().DisableHost(ctx, id) }, true},
			{"delete", func(id string) error { return b.Admin().DeleteHost(ctx, id) }, true},
			{"new secret", func(id string) error { return b.Admin().SetHostPassword(ctx, id, machineSecret(t)) }, true},
			{"failure counted", func(id string) error {
				if _, err := b.LoginHost(fromAddr(500), id, "", machineSecret(t)); !errors.Is(err, nmauth.ErrInvalidCredentials) {
					return fmt.Errorf("wrong secret: %v", err)
				}
				return nil
			}, false},
			{"store failure", func(string) error {
				w.failBatches.Store(true)
				return nil
			}, false},
		}
		for i, c := range cases {
			id, secret := fmt.Sprintf("unmade-%d", i), machineSecret(t)
			if err := a.Admin().CreateHost(ctx, id, "", secret); err != nil {
				t.Fatal(err)
			}
			w.gate.Lock()
			if _, err := a.LoginHost(fromAddr(i), id, "", secret); err != nil {
				w.gate.Unlock()
				t.Fatalf("%s: first login: %v", c.name, err)
			}
			// The seeded credential answers until the write's outcome.
			reads := w.reads.Load()
			if _, err := a.LoginHost(fromAddr(i), id, "", secret); err != nil || w.reads.Load() != reads {
				t.Errorf("%s: second login before the change: %v, %d reads", c.name, err, w.reads.Load()-reads)
			}
			err := c.change(id)
			tries := w.tries.Load()
			w.gate.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			if c.name == "store failure" {
				// The writer drops the host's entry after the Store
				// refused the batch, and only then tries it again: a
				// second try is after the drop, where the first may not
				// be yet.
				for w.tries.Load() < tries+2 {
					time.Sleep(time.Millisecond)
				}
			} else if err := a.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			if c.name == "failure counted" {
				h, err := s.GetHost(ctx, id)
				if err != nil || state.Of(h.State).PasswordFailures != 1 {
					t.Errorf("%s: %d failures stored, %v; want the one counted", c.name, state.Of(h.State).PasswordFailures, err)
				}
			}
			reads = w.reads.Load()
			_, err = a.LoginHost(fromAddr(i), id, "", secret)
			switch {
			case c.refused && !errors.Is(err, nmauth.ErrInvalidCredentials):
				t.Errorf("%s: login after the write: %v, want refused", c.name, err)
			case !c.refused && err != nil:
				t.Errorf("%s: login after the write: %v", c.name, err)
			}
			if n := w.reads.Load() - reads; n == 0 {
				t.Errorf("%s: the login after the write read no Store", c.name)
			}
			w.failBatches.Store(false)
			if err := a.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})
}
