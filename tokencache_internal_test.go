package nmauth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/nmauth/nmauth/internal/tokencache"
)

// cachedTokens returns an Authenticator over the memory store with the
// tokens of a user, a host, a node from IssueNodeToken and an access token of the user, each checked once so
// that the next check caches it.
func cachedTokens(t *testing.T, store Store, clock *fakeClock) (*Authenticator, map[string]string) {
	t.Helper()
	a := quickAuth(t, store, clock)
	ctx := context.Background()
	if err := a.Admin().CreateUser(ctx, "alice", "right password"); err != nil {
		t.Fatal(err)
	}
	user, err := a.LoginUser(from("192.0.2.1"), "alice", "right password")
	if err != nil {
		t.Fatal(err)
	}
	_, access, err := a.CreateAccessToken(ctx, Principal{Kind: KindMaster}, AccessTokenRequest{Name: "ci", UserName: "alice", ReadOnly: true, Networks: []string{"net-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Admin().CreateHost(ctx, "host-1", "", "host secret for host-1 0123456789"); err != nil {
		t.Fatal(err)
	}
	host, err := a.LoginHost(from("192.0.2.2"), "host-1", "", "host secret for host-1 0123456789")
	if err != nil {
		t.Fatal(err)
	}
	node, err := a.IssueNodeToken(ctx, "net-1", "node-1")
	if err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{"user": user.AuthToken, "access": access, "host": host.AuthToken, "node": node}
	for _, tok := range tokens {
		if _, err := a.CheckBearer(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	return a, tokens
}

// TestTokenCacheConfirmsTheToken: a cached token's entry answers only for
// the token itself. A token that differs in one byte of its claims or of
// its signature is checked afresh and refused; and an entry found under
// another token's key, as a hash collision would find it, is no hit.
func TestTokenCacheConfirmsTheToken(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	a, tokens := cachedTokens(t, NewMemoryStore(), clock)
	ctx := context.Background()
	for kind, token := range tokens {
		for range 2 {
			if _, err := a.CheckBearer(ctx, token); err != nil {
				t.Fatal(err)
			}
		}
		key, e, ok := a.tokens.get(token)
		if !ok {
			t.Fatalf("%s: the token is not cached after three checks", kind)
		}
		// The signature follows a JWT's last dot, an access token's last
		// underscore (a JWT's signature may hold underscores).
		sep := strings.LastIndexByte(token, '.')
		if strings.HasPrefix(token, accessTokenPrefix) {
			sep = strings.LastIndexByte(token, '_')
		}
		for name, at := range map[string]int{"claims": sep - 5, "signature": len(token) - 5} {
			b := []byte(token)
			b[at] ^= 'A' ^ 'B'
			if b[at] == token[at] {
				b[at] ^= 1
			}
			if _, err := a.CheckBearer(ctx, string(b)); !errors.Is(err, ErrUnauthenticated) {
				t.Errorf("%s token with a byte of its %s changed: %v, want ErrUnauthenticated", kind, name, err)
			}
		}
		// The entry planted under the key of a token that differs from it
		// in the first byte of its signature.
		b := []byte(token)
		b[sep+1] ^= 'A' ^ 'B'
		other := string(b)
		otherKey, _, _ := a.tokens.get(other)
		if _, held := a.tokens.Load(otherKey); otherKey == key || held {
			t.Fatalf("%s: no empty slot for the colliding key", kind)
		}
		a.tokens.Put(otherKey, e, clock.Now())
		if planted, held := a.tokens.Load(otherKey); !held || planted != e {
			t.Fatalf("%s: the entry was not planted under the colliding key", kind)
		}
		if _, _, hit := a.tokens.get(other); hit {
			t.Errorf("%s: an entry under a colliding key answered for another token", kind)
		}
		if _, err := a.CheckBearer(ctx, other); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%s: the token under a colliding key: %v, want ErrUnauthenticated", kind, err)
		}
		if _, _, hit := a.tokens.get(token); !hit {
			t.Errorf("%s: the token's own entry is gone", kind)
		}
	}
}

// TestTokenCacheHitGivesTheSamePrincipal: a cache hit answers the very
// principal, field for field, that the token's uncached check gives, for
// every kind of token the cache keeps compact and for those it keeps
// whole.
func TestTokenCacheHitGivesTheSamePrincipal(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	store := NewMemoryStore()
	a, tokens := cachedTokens(t, store, clock)
	uncached := quickAuth(t, store, clock, func(c *Config) { c.TokenCacheSize = -1 })
	ctx := context.Background()
	for kind, token := range tokens {
		if _, err := a.CheckBearer(ctx, token); err != nil {
			t.Fatal(err)
		}
		_, e, ok := a.tokens.get(token)
		if !ok {
			t.Fatalf("%s: not cached", kind)
		}
		// Only the access token's principal is kept whole.
		if whole := tokencache.WholeOf[tokenExt](&e.Principal) != nil; whole != (kind == "access") {
			t.Errorf("%s: kept whole %v", kind, whole)
		}
		hits := a.Stats().TokenCache.Hits
		got, err := a.CheckBearer(ctx, token)
		if err != nil {
			t.Fatal(err)
		}
		if a.Stats().TokenCache.Hits != hits+1 {
			t.Fatalf("%s: the check was no hit", kind)
		}
		want, err := uncached.CheckBearer(ctx, token)
		if err != nil {
			t.Fatal(err)
		}
		if (got.networks == nil) != (want.networks == nil) || got.networks != nil && fmt.Sprint(*got.networks) != fmt.Sprint(*want.networks) {
			t.Errorf("%s: cached networks %v, want %v", kind, got.networks, want.networks)
		}
		got.networks, want.networks = nil, nil
		if got != want || !got.IssuedAt.Equal(want.IssuedAt) || got.IssuedAt.Location() != want.IssuedAt.Location() {
			t.Errorf("%s: cached principal\n%+v\nwant\n%+v", kind, got, want)
		}
		if got.Name == "" || got.TokenID == "" || got.ExpiresAt.IsZero() {
			t.Errorf("%s: principal lacks fields: %+v", kind, got)
		}
	}
}

// TestTokenCacheExpiry: a cached token is refused from its expiry on, by
// the Authenticator's clock, as an uncached one is.
func TestTokenCacheExpiry(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	a, tokens := cachedTokens(t, NewMemoryStore(), clock)
	ctx := context.Background()
	for kind, token := range tokens {
		p, err := a.CheckBearer(ctx, token)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, ok := a.tokens.get(token); !ok {
			t.Fatalf("%s: not cached", kind)
		}
		if p.ExpiresAt.Sub(clock.Now()) <= 0 {
			t.Fatalf("%s: expires at %v", kind, p.ExpiresAt)
		}
	}
	// Every token above expires within a year (the access token's
	// default TTL is the longest).
	clock.Advance(366 * 24 * time.Hour)
	for kind, token := range tokens {
		if _, err := a.CheckBearer(ctx, token); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%s: an expired cached token: %v, want ErrUnauthenticated", kind, err)
		}
	}
}

// TestTokenCacheBound: the cache holds at most TokenCacheSize tokens
// however many verify, keeps every token of a fleet within its size from
// the second check on, and a token it dropped still checks, by a parse.
func TestTokenCacheBound(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	const size = 1000
	a := quickAuth(t, NewMemoryStore(), clock, func(c *Config) { c.TokenCacheSize = size })
	ctx := context.Background()
	var tokens []string
	for i := range 3 * size {
		tok, err := a.IssueNodeToken(ctx, "net-1", fmt.Sprintf("node-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, tok)
	}
	// A fleet of half the size: every token is cached on its second
	// check, the table growing from its first size as it fills, and each
	// stays cached through every growth.
	fleet := tokens[:size/2]
	for range 2 {
		for _, tok := range fleet {
			if _, err := a.CheckBearer(ctx, tok); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := a.tokens.Slots(); n <= 512 {
		t.Errorf("the table did not grow: %d slots", n)
	}
	before := a.Stats().TokenCache
	for _, tok := range fleet {
		if _, err := a.CheckBearer(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	after := a.Stats().TokenCache
	hits := int(after.Hits - before.Hits)
	if hits != len(fleet) || after.Size != len(fleet) {
		t.Errorf("a fleet of %d within the cache: %d hits, size %d", len(fleet), hits, after.Size)
	}
	// Three times the size, twice over: the cache stays within its size
	// and every token checks.
	for range 2 {
		for _, tok := range tokens {
			if _, err := a.CheckBearer(ctx, tok); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := a.Stats().TokenCache.Size; got > size || got < size/2 {
		t.Errorf("cache size %d after %d tokens, want at most %d and most of it", got, len(tokens), size)
	}
	if n := a.tokens.Slots(); n > size+size/4 {
		t.Errorf("%d slots, want at most %d", n, size+size/4)
	}
}

// TestTokenCacheReaderNeverMixesWrites: while a writer rewrites one slot
// over and over with the entries of two tokens under the same key (as a
// collision of keys would), readers of the slot find each token only with
// its own principal. Run it with -race.
func TestTokenCacheReaderNeverMixesWrites(t *testing.T) {
	c := newTokenCache(100)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tokens := [2]string{"h.a." + strings.Repeat("A", 43), "h.b." + strings.Repeat("B", 43)}
	var entries [2]tokenEntry
	for i, name := range []string{"alpha", "beta-and-more"} {
		sig, ok := tokenSignature(tokens[i])
		if !ok {
			t.Fatal("no signature")
		}
		entries[i] = newTokenEntry(&sig, &Principal{Kind: KindNode, Name: name, Network: name, TokenID: name,
			IssuedAt: time.Unix(now.Unix()-int64(i)*3600, 0), ExpiresAt: time.Unix(now.Unix()+int64(i+1)*3600, 0)}, nil, nil)
		// Compact, as a JWT's principal is: times as time.Unix gives them.
		if tokencache.WholeOf[tokenExt](&entries[i].Principal) != nil {
			t.Fatal("entry not compact")
		}
	}
	const key = 42
	c.Put(key, entries[0], now)
	// The readers look up until the writer, after at least 100,000
	// writes, sees that they found both tokens (or gives up after ten
	// million).
	var hits [2]atomic.Int64
	var readers sync.WaitGroup
	done := make(chan struct{})
	for r := range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for i := 0; ; i++ {
				if i%1024 == 0 {
					select {
					case <-done:
						return
					default:
					}
				}
				w := (i + r) % 2
				if _, e, ok := c.lookup(key, tokens[w]); ok {
					hits[w].Add(1)
					want := cachedPrincipal(&entries[w].Principal)
					if got := cachedPrincipal(&e.Principal); got != want {
						t.Errorf("token %d answered %+v, want %+v", w, got, want)
						return
					}
				}
			}
		}()
	}
	for i := 0; i < 10_000_000 && (i < 100_000 || hits[0].Load() == 0 || hits[1].Load() == 0); i++ {
		c.Put(key, entries[i%2], now)
	}
	close(done)
	readers.Wait()
	if hits[0].Load() == 0 || hits[1].Load() == 0 {
		t.Errorf("hits %d and %d: the readers did not read both entries", hits[0].Load(), hits[1].Load())
	}
}

// TestTokenSlotSize: a slot is 88 bytes, as the tokenCache comment says.
func TestTokenSlotSize(t *testing.T) {
	if n := unsafe.Sizeof(tokenSlot{}); n != 88 {
		t.Errorf("a slot is %d bytes", n)
	}
}
