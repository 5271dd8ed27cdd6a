package nmauth

import (
	"context"
	"crypto/sha256"
	"net/netip"
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
	a.hasher.ArgonKey = func(password, salt []byte, _, _ uint32, _ uint8, keyLen uint32) []byte {
		sum := sha256.Sum256(append(append([]byte{}, salt...), password...))
		return sum[:keyLen]
	}
	return a
}

func from(addr string) context.Context {
	return WithClientAddr(context.Background(), netip.MustParseAddr(addr))
}
