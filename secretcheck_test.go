package nmauth_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

// TestCheckSecrets: a store written under one root secret is refused under
// another, accepted when the old one is still listed, and TOTP secrets
// sealed under a secret no longer configured are named (issue 11, and
// issue 14 finding 9).
func TestCheckSecrets(t *testing.T) {
	store := nmauth.NewMemoryStore()
	ctx := context.Background()
	newAuth := func(secrets ...[]byte) *nmauth.Authenticator {
		a, err := nmauth.New(nmauth.Config{Store: store, Secrets: secrets})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	old := newAuth(testSecret(1))
	if err := old.CheckSecrets(ctx); err != nil {
		t.Fatalf("empty store: %v", err)
	}
	if err := old.Admin().CreateUser(ctx, "alice", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	// The error names the key id of the secret to restore, and that of
	// the one configured, as a token's kid names them.
	oldKID, newKID := newForger(t, testSecret(1)).kid, newForger(t, testSecret(2)).kid
	err := newAuth(testSecret(2)).CheckSecrets(ctx)
	if !errors.Is(err, nmauth.ErrSecretMismatch) || !strings.Contains(err.Error(), "restore the root secret of key id "+oldKID) ||
		!strings.Contains(err.Error(), "configured root secrets have key id "+newKID) {
		t.Errorf("another secret: %v, want ErrSecretMismatch naming key id %s to restore, and %s configured", err, oldKID, newKID)
	}
	if err := newAuth(testSecret(2), testSecret(1)).CheckSecrets(ctx); err != nil {
		t.Errorf("new,old: %v", err)
	}
	// TOTP on under the old secret, which is then dropped before reseal.
	master := nmauth.Principal{Kind: nmauth.KindMaster}
	e, err := old.InitTOTP(ctx, master, "alice")
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, clock: &clock{now: time.Now()}}
	if _, err := old.CompleteTOTP(ctx, master, "alice", e.URL, e.Signature, f.code(secretOf(t, e.URL), 0), ""); err != nil {
		t.Fatal(err)
	}
	err = newAuth(testSecret(2)).CheckSecrets(ctx)
	if !errors.Is(err, nmauth.ErrSecretMismatch) || !strings.Contains(err.Error(), "TOTP") || !strings.Contains(err.Error(), oldKID) {
		t.Errorf("TOTP secrets under a dropped secret: %v, want ErrSecretMismatch naming them and key id %s", err, oldKID)
	}
}
