package nmauth

import (
	"context"
	"fmt"
)

// KeyCheckStore is implemented by a [Store] that keeps a check value for
// each root secret that wrote to it, so that [Authenticator.CheckSecrets]
// can tell at start that the configured secrets are not the ones the
// data was written under. A check value is derived from a root secret by
// HKDF and reveals nothing of it.
type KeyCheckStore interface {
	// KeyChecks returns the stored check values by key id.
	KeyChecks(ctx context.Context) (map[string]string, error)
	// AddKeyCheck stores the check value of a key id; a key id already
	// stored keeps its value.
	AddKeyCheck(ctx context.Context, keyID, check string) error
	// HasAccounts reports whether the Store holds any user or host.
	HasAccounts(ctx context.Context) (bool, error)
}

// CheckSecrets checks, before serving, that the configured root secrets
// are the ones the Store's data was written under. It returns an error
// matching [ErrSecretMismatch] when the Store holds accounts and keeps
// check values of which none is of a configured secret (or, for a Store
// from before check values, holds TOTP secrets none of which opens), and
// when TOTP secrets are sealed under a key id that is not configured
// (restore that secret, then run [Authenticator.ResealTOTPSecrets]).
// Otherwise it records the first secret's check value and returns nil. A
// Store that does not implement [KeyCheckStore] is only scanned for TOTP
// secrets.
func (a *Authenticator) CheckSecrets(ctx context.Context) error {
	inner := a.store.(*guardedStore).Store
	if ks, ok := inner.(KeyCheckStore); ok {
		if err := a.checkKeyValues(ctx, ks); err != nil {
			return err
		}
	}
	sealed, unknown := 0, map[string]int{}
	for after := ""; ; {
		users, err := a.store.ListUsers(ctx, after, scanPage)
		if err != nil {
			return err
		}
		for _, u := range users {
			if !u.TOTPEnabled() {
				continue
			}
			sealed++
			if id := a.ring.sealedKeyID(u.TOTPSecret); a.ring.byID(id) == nil {
				unknown[id]++
			}
		}
		if len(users) < scanPage {
			break
		}
		after = users[len(users)-1].Name
	}
	if len(unknown) == sealed && sealed > 0 {
		return fmt.Errorf("%w: none of the %d stored TOTP secrets was sealed under a configured root secret", ErrSecretMismatch, sealed)
	}
	for id, n := range unknown {
		return fmt.Errorf("%w: %d of %d stored TOTP secrets are sealed under key id %s, which is not configured; "+
			"add that root secret after the first and run reseal", ErrSecretMismatch, n, sealed, id)
	}
	return nil
}

func (a *Authenticator) checkKeyValues(ctx context.Context, ks KeyCheckStore) error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.StoreTimeout)
	defer cancel()
	checks, err := ks.KeyChecks(ctx)
	if err != nil {
		return fmt.Errorf("%w: key checks: %w", ErrStoreUnavailable, err)
	}
	has, err := ks.HasAccounts(ctx)
	if err != nil {
		return fmt.Errorf("%w: key checks: %w", ErrStoreUnavailable, err)
	}
	if has && len(checks) > 0 && !a.ring.matchesAny(checks) {
		return fmt.Errorf("%w: it holds accounts and check values of %d root secrets, none of them configured", ErrSecretMismatch, len(checks))
	}
	signer := a.ring.signer()
	if err := ks.AddKeyCheck(ctx, signer.id, signer.check); err != nil {
		return fmt.Errorf("%w: key checks: %w", ErrStoreUnavailable, err)
	}
	return nil
}
