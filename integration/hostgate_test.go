package integration

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

// slowMadeUp is a SQLStore whose reads of made-up host ids take delay,
// so that a flood of them fills the host gate's queue as a flood would
// fill a real one's, at a fraction of the machine.
type slowMadeUp struct {
	*nmauth.SQLStore
	delay time.Duration
}

func (s *slowMadeUp) slow(id string) {
	if strings.HasPrefix(id, "made-up-") {
		time.Sleep(s.delay)
	}
}

func (s *slowMadeUp) GetHostLogin(ctx context.Context, id string) (nmauth.Host, error) {
	s.slow(id)
	return s.SQLStore.GetHostLogin(ctx, id)
}

func (s *slowMadeUp) GetHost(ctx context.Context, id string) (nmauth.Host, error) {
	s.slow(id)
	return s.SQLStore.GetHost(ctx, id)
}

// TestHostGateKnowsOwnerAfterRestart: a host logs in rightly from its
// address on one Authenticator; then another Authenticator over the same
// database takes a flood of made-up host ids with machine-secret-shaped
// secrets from 100 IPv4 /24s, one login in flight each, at a host gate of
// one slot and 64 places, whose every made-up id costs 20 ms of the
// Store. Served in its group's turn, a login waits some 64 turns, past
// the queue timeout of 400 ms; the host at its own address must be let in
// first, as the known are, though the second Authenticator has seen no
// login of it from there: at least 19 of its 20 logins get in. The second
// is the first restarted (its database handle closed) on SQLite and on
// PostgreSQL; a second replica on PostgreSQL started while the first runs;
// and one started before the host's login on the first, which learns the
// host's address from the record a login of the host from elsewhere
// reads. The cache of machine credentials is off, as it is in effect for
// a host whose logins are further apart than its lifetime, so that each
// login waits at the gate.
func TestHostGateKnowsOwnerAfterRestart(t *testing.T) {
	const (
		restarted  = iota // the first is closed before the second starts
		replica           // the second starts after the host's login on the first
		sideBySide        // the second starts before it
	)
	cases := []struct {
		name string
		b    int // of sqlBackends
		mode int
	}{
		{"SQLite, restarted", 0, restarted},
		{"Postgres, restarted", 1, restarted},
		{"Postgres, second replica", 1, replica},
		{"Postgres, replicas side by side", 1, sideBySide},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := sqlBackends[tc.b]
			if b.dialect == nmauth.DialectPostgres {
				postgresDSN(t)
			}
			open := b.fresh(t)
			ctx := context.Background()
			firstDB := open(t)
			first, err := nmauth.New(nmauth.Config{Store: newSQLStore(t, firstDB, b.dialect), Secrets: [][]byte{writesRoot}, ClientRate: -1})
			if err != nil {
				t.Fatal(err)
			}
			secret := machineSecret(t)
			if err := first.Admin().CreateHost(ctx, "owner", "", secret); err != nil {
				t.Fatal(err)
			}
			var a *nmauth.Authenticator
			second := func() {
				a, err = nmauth.New(nmauth.Config{
					Store:   &slowMadeUp{SQLStore: newSQLStore(t, open(t), b.dialect), delay: 20 * time.Millisecond},
					Secrets: [][]byte{writesRoot}, ClientRate: -1,
					HostLoginConcurrency: 1, HostLoginQueue: 64, QueueTimeout: 400 * time.Millisecond,
					StatusCacheTTL: -1,
				})
				if err != nil {
					t.Fatal(err)
				}
				// It serves, as a server that mounts its handler does: it
				// reads the known hosts from then on.
				a.Handler()
				t.Cleanup(func() { a.Shutdown(ctx) })
			}
			waitKnown := func(n int) {
				for deadline := time.Now().Add(10 * time.Second); a.Stats().KnownHosts < n; time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("the second Authenticator knows %d hosts; want %d", a.Stats().KnownHosts, n)
					}
				}
			}
			if tc.mode == sideBySide {
				// Another host, known before the second starts, tells when
				// its read of the known hosts is over.
				if err := first.Admin().CreateHost(ctx, "early", "", secret); err != nil {
					t.Fatal(err)
				}
				if _, err := first.LoginHost(clientCtx("192.0.2.5"), "early", "", secret); err != nil {
					t.Fatal(err)
				}
				if err := first.Shutdown(ctx); err != nil {
					t.Fatal(err)
				}
				second()
				waitKnown(1)
			}
			own := clientCtx("198.51.100.7")
			if _, err := first.LoginHost(own, "owner", "", secret); err != nil {
				t.Fatalf("the host's first login: %v", err)
			}
			// Its address is written known, with the login's batch.
			if err := first.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			switch tc.mode {
			case restarted:
				firstDB.Close()
				second()
				waitKnown(1)
			case replica:
				second()
				waitKnown(1)
			case sideBySide:
				// The host logs in to the second from another address
				// while its gate has room.
				if _, err := a.LoginHost(clientCtx("192.0.2.77"), "owner", "", secret); err != nil {
					t.Fatal(err)
				}
			}

			stop := make(chan struct{})
			var flooders sync.WaitGroup
			var refused, served atomic.Int64
			for i := range 100 {
				flooders.Add(1)
				go func() {
					defer flooders.Done()
					from := nmauth.WithClientAddr(ctx, netip.AddrFrom4([4]byte{198, 18, byte(i), 1}))
					for n := 0; ; n++ {
						select {
						case <-stop:
							return
						default:
						}
						_, err := a.LoginHost(from, fmt.Sprintf("made-up-%d-%d", i, n), "", secret)
						switch {
						case errors.Is(err, nmauth.ErrInvalidCredentials):
							served.Add(1)
						case errors.Is(err, nmauth.ErrOverloaded):
							refused.Add(1)
							time.Sleep(50 * time.Millisecond) // keep the machine's CPU for the test
						default:
							t.Errorf("a made-up id's login: %v; want 401 or 503", err)
							return
						}
					}
				}()
			}
			for refused.Load() < 50 {
				time.Sleep(10 * time.Millisecond) // until the queue is full
			}
			const logins = 20
			ok := 0
			var errs []string
			for range logins {
				if _, err := a.LoginHost(own, "owner", "", secret); err == nil {
					ok++
				} else {
					errs = append(errs, err.Error())
				}
				time.Sleep(20 * time.Millisecond)
			}
			close(stop)
			flooders.Wait()
			t.Logf("flood: %d served, %d refused; the host's failed logins: %v", served.Load(), refused.Load(), errs)
			if served.Load() == 0 {
				t.Error("no made-up id was served: the flood did not reach the gate")
			}
			if ok < logins*95/100 {
				t.Errorf("%d of the host's %d logins from its own address got in under the flood; want at least 95%%", ok, logins)
			}
		})
	}
}

// TestKnownHostsReadInBatches: 2,500 hosts, each known from an address
// of its own, are all known to a new Authenticator over the same Store,
// which reads them a thousand at a time.
func TestKnownHostsReadInBatches(t *testing.T) {
	s := nmauth.NewMemoryStore()
	ctx := context.Background()
	first, err := nmauth.New(nmauth.Config{Store: s, Secrets: [][]byte{writesRoot}, ClientRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	const hosts = 2500
	secret := machineSecret(t)
	for i := range hosts {
		id := fmt.Sprintf("host-%04d", i)
		if err := first.Admin().CreateHost(ctx, id, "", secret); err != nil {
			t.Fatal(err)
		}
		if _, err := first.LoginHost(fromAddr(i), id, "", secret); err != nil {
			t.Fatal(err)
		}
	}
	if err := first.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if n := first.Stats().KnownHosts; n != hosts {
		t.Errorf("the Authenticator the hosts logged in on knows %d of them; want %d", n, hosts)
	}
	a, err := nmauth.New(nmauth.Config{Store: s, Secrets: [][]byte{writesRoot}, ClientRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	a.Handler() // it serves: it reads the known hosts from then on
	for deadline := time.Now().Add(10 * time.Second); a.Stats().KnownHosts < hosts; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a new Authenticator knows %d of the %d hosts; want all", a.Stats().KnownHosts, hosts)
		}
	}
}
