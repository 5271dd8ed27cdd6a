package nmauth

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestTokenCacheConfirmsTheToken: a cached token's entry answers only for
// the token itself. A token that differs in one byte of its claims or of
// its signature is checked afresh and refused; and an entry found under
// another token's key, as a hash collision would find it, is no hit.
func TestTokenCacheConfirmsTheToken(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	a := quickAuth(t, NewMemoryStore(), clock)
	ctx := context.Background()
	if err := a.CreateUser(ctx, "alice", "right password"); err != nil {
		t.Fatal(err)
	}
	out, err := a.LoginUser(from("192.0.2.1"), "alice", "right password")
	if err != nil {
		t.Fatal(err)
	}
	token := out.AuthToken
	for range 3 { // the second check caches it
		if _, err := a.CheckBearer(ctx, token); err != nil {
			t.Fatal(err)
		}
	}
	if _, e := a.tokens.get(token, clock.Now()); e == nil {
		t.Fatal("the token is not cached after three checks")
	}
	dot := len(token) - len(signature(token)) - 1
	for name, at := range map[string]int{"claims": dot - 5, "signature": len(token) - 5} {
		b := []byte(token)
		b[at] ^= 'A' ^ 'B'
		if b[at] == token[at] {
			b[at] ^= 1
		}
		if _, err := a.CheckBearer(ctx, string(b)); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("token with a byte of its %s changed: %v, want ErrUnauthenticated", name, err)
		}
	}
	key, e := a.tokens.get(token, clock.Now())
	other := token[:dot] + "." + signature(token)[1:] + "A"
	otherKey, _ := a.tokens.get(other, clock.Now())
	a.tokens.c.Set(otherKey, e)
	if _, hit := a.tokens.get(other, clock.Now()); hit != nil {
		t.Error("an entry under a colliding key answered for another token")
	}
	if _, hit := a.tokens.get(token, clock.Now()); hit == nil || key == otherKey {
		t.Error("the token's own entry is gone")
	}
}
