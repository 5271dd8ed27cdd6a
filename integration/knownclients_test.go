package integration

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

// gatedReplica is an Authenticator with one hashing slot, which a test
// holds through a node login whose membership hook waits for it (the
// hook runs while the login holds its slot), and the login events in
// the order the slot went round.
type gatedReplica struct {
	a       *nmauth.Authenticator
	entered chan struct{}
	hold    chan struct{}
	mu      sync.Mutex
	logins  []string
}

func newGatedReplica(t *testing.T, s nmauth.Store) *gatedReplica {
	r := &gatedReplica{entered: make(chan struct{}, 1)}
	a, err := nmauth.New(nmauth.Config{
		Store: s, Secrets: [][]byte{writesRoot}, ClientRate: -1,
		PasswordHashConcurrency: 1, PasswordHashQueue: 64,
		NodeMember: func(ctx context.Context, network, id string) (bool, error) {
			r.entered <- struct{}{}
			<-r.hold
			return true, nil
		},
		OnEvent: func(ctx context.Context, e nmauth.Event) {
			if e.Kind == nmauth.KindUser && (e.Type == nmauth.EventLoginSucceeded || e.Type == nmauth.EventLoginFailed) {
				r.mu.Lock()
				r.logins = append(r.logins, fmt.Sprintf("%s@%s", e.Name, e.Client))
				r.mu.Unlock()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	r.a = a
	return r
}

func clientCtx(addr string) context.Context {
	return nmauth.WithClientAddr(context.Background(), netip.MustParseAddr(addr))
}

// TestKnownClientsPerAccount: alice logs in rightly from her address,
// mallory from his. Then, with the one hashing slot held and three wrong
// passwords for bob waiting from three /24s, alice logs in from mallory's
// address and then from her own. The slot must go first to alice at her
// own address, known to her account in the Store, and to alice at
// mallory's address only after bob's logins, in their groups' turn:
// mallory's right login made his address known to his account alone. It
// holds on the Authenticator the logins were made on and on a new one on
// the same Store, as after a restart or on another replica; on the memory
// store, SQLite and PostgreSQL.
func TestKnownClientsPerAccount(t *testing.T) {
	run := func(t *testing.T, sa, sb nmauth.Store) {
		first := newGatedReplica(t, sa)
		ctx := context.Background()
		admin := first.a.Admin()
		for _, name := range []string{"alice", "bob", "mallory"} {
			if err := admin.CreateUser(ctx, name, name+" right password"); err != nil {
				t.Fatal(err)
			}
		}
		if err := admin.CreateHost(ctx, "holder", "", "holder password 1"); err != nil {
			t.Fatal(err)
		}
		// Mallory logs in from one address for each run: alice's right
		// login from it in one run makes it hers for the next.
		for _, l := range []struct{ name, addr string }{{"alice", "198.51.100.7"}, {"mallory", "203.0.113.5"}, {"mallory", "203.0.113.6"}} {
			if _, err := first.a.LoginUser(clientCtx(l.addr), l.name, l.name+" right password"); err != nil {
				t.Fatalf("%s's first login: %v", l.name, err)
			}
		}
		for _, gate := range []struct {
			name, mallorys string
			r              func() *gatedReplica
		}{
			{"same Authenticator", "203.0.113.5", func() *gatedReplica { return first }},
			{"new Authenticator", "203.0.113.6", func() *gatedReplica { return newGatedReplica(t, sb) }},
		} {
			t.Run(gate.name, func(t *testing.T) {
				got := gatedOrder(t, gate.r(), gate.mallorys)
				if len(got) != 5 || got[0] != "alice@198.51.100.7" || got[4] != "alice@"+gate.mallorys {
					t.Errorf("the slot went to %v; want alice at her own address first, alice at mallory's after bob's three", got)
				}
			})
		}
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

// gatedOrder holds r's slot, queues bob's three wrong logins and alice's
// two, from mallorys and from her own address, and returns the user logins in the order they were served.
func gatedOrder(t *testing.T, r *gatedReplica, mallorys string) []string {
	r.hold = make(chan struct{})
	r.logins = nil
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := r.a.LoginNode(clientCtx("192.0.2.1"), "net", "holder", "", "holder password 1"); err != nil {
			t.Errorf("the node login that holds the slot: %v", err)
		}
	}()
	<-r.entered
	queue := func(name, addr, password string, waiting int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = r.a.LoginUser(clientCtx(addr), name, password)
		}()
		for deadline := time.Now().Add(10 * time.Second); r.a.Stats().PasswordHashesWaiting < waiting; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s from %s does not wait", name, addr)
			}
		}
	}
	for i := range 3 {
		queue("bob", fmt.Sprintf("10.0.%d.7", i+1), "wrong password", i+1)
	}
	queue("alice", mallorys, "alice right password", 4)
	queue("alice", "198.51.100.7", "alice right password", 5)
	close(r.hold)
	wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.logins)
}
