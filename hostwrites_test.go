package nmauth_test

import (
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/nmauth/nmauth"
)

// panickyBatches is a Store whose UpdateHosts panics the first panics
// times it is called, then applies the updates.
type panickyBatches struct {
	*nmauth.MemoryStore
	mu     sync.Mutex
	panics int
}

func (s *panickyBatches) UpdateHosts(ctx context.Context, updates []nmauth.HostUpdate) error {
	s.mu.Lock()
	panics := s.panics > 0
	s.panics--
	s.mu.Unlock()
	if panics {
		panic("store bug")
	}
	return s.MemoryStore.UpdateHosts(ctx, updates)
}

// TestHostWritesLogPanicOnce: when the Store panics in UpdateHosts three
// times before it takes a batch of host login writes, the log has one
// line with the panic and its stack, not one per retry, and one line when
// the writes reach the Store; the write is made.
func TestHostWritesLogPanicOnce(t *testing.T) {
	store := &panickyBatches{MemoryStore: nmauth.NewMemoryStore(), panics: 3}
	logs := &lockedBuffer{}
	a, err := nmauth.New(nmauth.Config{Store: store, Secrets: [][]byte{testSecret(1)}, ClientRate: -1,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	secret := netclientPassword()
	ctx := nmauth.WithClientAddr(context.Background(), netip.MustParseAddr("192.0.2.10"))
	if err := a.Admin().CreateHost(ctx, "h1", "", secret); err != nil {
		t.Fatal(err)
	}
	if _, err := a.LoginHost(ctx, "h1", "", secret); err != nil {
		t.Fatal(err)
	}
	if err := a.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if n := strings.Count(out, "store bug"); n != 1 {
		t.Errorf("the panic is logged %d times, want once:\n%s", n, out)
	}
	if !strings.Contains(out, "panickyBatches") {
		t.Errorf("no stack with the panic:\n%s", out)
	}
	if n := strings.Count(out, "reach the store again"); n != 1 {
		t.Errorf("%d lines say the writes reach the store, want 1:\n%s", n, out)
	}
	h, err := store.GetHost(context.Background(), "h1")
	if clients := nmauth.StateOf(&h.State).PasswordClients; err != nil || len(clients) != 1 || !clients[0].Known {
		t.Errorf("host after the writes: %+v, %v; want its client known", h, err)
	}
}
