package tests_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/passkey"
)

// eachWire runs test once per wire profile.
func eachWire(t *testing.T, test func(t *testing.T, w nmauth.WireProfile)) {
	for _, w := range []nmauth.WireProfile{nmauth.WireSpec, nmauth.WireNetmaker} {
		t.Run(w.String(), func(t *testing.T) { test(t, w) })
	}
}

// TestPasskeyAsSecondFactor walks a user through the passkey life over
// HTTP, in both wire profiles and over every Store: the first passkey
// revokes the password-only token and returns one that passed it; a
// password login then asks for a second factor, and an assertion answers
// it with a user token that passed one, once; the passkey's sign count
// and last use follow.
func TestPasskeyAsSecondFactor(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
			store, _ := b.fresh(t)
			h := newHarness(t, options{wire: w, store: store(t)})
			h.addUser("alice")
			password := h.userToken("alice")

			k := newSoftKey(t)
			out := h.register("alice", password, "laptop", k)
			fresh, _ := out["authToken"].(string)
			if p, err := h.principal(fresh); err != nil || p.Name != "alice" || !p.TOTP {
				t.Fatalf("the token of the first registration checks as %+v, %v; want alice, second factor passed", p, err)
			}
			if _, err := h.principal(password); !errors.Is(err, nmauth.ErrUnauthenticated) {
				t.Errorf("the password-only token after the first passkey: %v, want revoked", err)
			}
			if n := h.events.count(passkey.EventAdded); n != 1 {
				t.Errorf("%d %s events, want 1", n, passkey.EventAdded)
			}

			list := h.send(http.MethodGet, "/api/users/alice/passkeys", fresh, nil)
			wantStatus(t, list, http.StatusOK)
			keys, _ := list.response(t)["passkeys"].([]any)
			if len(keys) != 1 || keys[0].(map[string]any)["name"] != "laptop" || keys[0].(map[string]any)["publicKey"] != nil {
				t.Fatalf("the listing is %s, want one passkey named laptop without its key", list.body)
			}

			pre, isPre := h.passwordLogin("alice")
			if !isPre {
				t.Fatal("a password login of a user with a passkey did not ask for a second factor")
			}
			opts := h.beginSecondFactor("alice", pre)
			if allow, _ := opts["allowCredentials"].([]any); len(allow) != 1 {
				t.Errorf("the challenge allows %v, want alice's one passkey", opts["allowCredentials"])
			}
			r := h.finishSecondFactor("alice", pre, k.get(t, assertion(opts, k)))
			wantStatus(t, r, http.StatusOK)
			if p, err := h.principal(r.token(t)); err != nil || p.Name != "alice" || !p.TOTP {
				t.Fatalf("the second factor's token checks as %+v, %v", p, err)
			}
			if n := h.events.count(nmauth.EventSecondFactorPassed); n != 1 {
				t.Errorf("%d %s events, want 1", n, nmauth.EventSecondFactorPassed)
			}
			if pk := h.record("alice").Passkeys[0]; pk.SignCount != k.count || pk.LastUsedAt.IsZero() {
				t.Errorf("after a login the passkey has sign count %d, last use %v; want %d and a time", pk.SignCount, pk.LastUsedAt, k.count)
			}

			// The pre-auth token is spent: another assertion cannot redeem it.
			opts2 := h.post("/api/users/alice/auth/passkey/begin", pre, nil)
			wantError(t, opts2, http.StatusUnauthorized)
		})
	})
}

// TestRecoveryCodesBesidePasskeys keeps TOTP's recovery codes working for a
// user who has a passkey too, and the passkey working after one was used.
func TestRecoveryCodesBesidePasskeys(t *testing.T) {
	h := newHarness(t, options{})
	h.addUser("alice")
	ctx := context.Background()
	tok, err := h.ext.Login(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	fresh, _ := h.register("alice", tok.AuthToken, "key", newSoftKey(t))["authToken"].(string)
	if fresh == "" {
		t.Fatal("no fresh token after the first passkey")
	}
	// TOTP on through the library, with the fresh token that passed the
	// passkey; the recovery codes come with it.
	p, err := h.principal(fresh)
	if err != nil {
		t.Fatal(err)
	}
	e, err := h.auth.InitTOTP(ctx, p, "alice")
	if err != nil {
		t.Fatal(err)
	}
	completion, err := h.auth.CompleteTOTP(ctx, p, "alice", e.URL, e.Signature, totpNow(t, e.URL, h.clock.Now()), "")
	if err != nil {
		t.Fatal(err)
	}
	pre, _ := h.passwordLogin("alice")
	r := h.post("/api/users/alice/auth/verify-totp", pre, map[string]string{"totp": completion.RecoveryCodes[0]})
	wantStatus(t, r, http.StatusOK)
	if n, _ := h.auth.Admin().RecoveryCodesLeft(ctx, "alice"); n != len(completion.RecoveryCodes)-1 {
		t.Errorf("%d recovery codes left, want %d", n, len(completion.RecoveryCodes)-1)
	}
}
