package nmauth

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nmauth/nmauth/internal/rootkey"
	"github.com/nmauth/nmauth/internal/walk"
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
// (restore that secret, then run [Admin.ResealTOTPSecrets]).
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
	byKey, err := a.sealedKeyIDs(ctx, inner)
	if err != nil {
		return err
	}
	sealed, unsealable, unknown := 0, 0, map[string]int{}
	for id, n := range byKey {
		sealed += n
		if a.ring.ByID(id) == nil {
			unknown[id] += n
			unsealable += n
		}
	}
	if unsealable == sealed && sealed > 0 {
		return fmt.Errorf("%w: none of the %d stored TOTP secrets was sealed under a configured root secret; "+
			"they are sealed under key id %s, and the configured root secrets have key id %s: restore the root secret of key id %s",
			ErrSecretMismatch, sealed, keyIDList(unknown), a.ring.IDs(), keyIDList(unknown))
	}
	for id, n := range unknown {
		return fmt.Errorf("%w: %d of %d stored TOTP secrets are sealed under key id %s, which is not configured; "+
			"add that root secret after the first and run reseal", ErrSecretMismatch, n, sealed, id)
	}
	return nil
}

// sealedScanTimeout bounds the one query that counts sealed TOTP secrets.
const sealedScanTimeout = 30 * time.Second

// keyIDCounter is implemented by a store that counts its sealed TOTP
// secrets by key id without decoding its rows (the [SQLStore]).
type keyIDCounter interface {
	sealedKeyIDs(ctx context.Context) (map[string]int, error)
}

// sealedKeyIDs counts the stored TOTP secrets by the key id they are
// sealed under: in one query where the store can, else by walking the
// users.
func (a *Authenticator) sealedKeyIDs(ctx context.Context, inner Store) (map[string]int, error) {
	if kc, ok := inner.(keyIDCounter); ok {
		// One query over the whole table at start, not a request's call:
		// a bound of its own rather than StoreTimeout.
		ctx, cancel := context.WithTimeout(ctx, max(a.cfg.StoreTimeout, sealedScanTimeout))
		defer cancel()
		ids, err := kc.sealedKeyIDs(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
		}
		return ids, nil
	}
	ids := map[string]int{}
	err := walk.All(ctx, scanPage, a.store.ListUsers, func(u User) string { return u.Name }, func(u User) error {
		if u.TOTPEnabled() {
			ids[rootkey.SealedKeyID(u.TOTPSecret)]++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
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
	if has && len(checks) > 0 && !a.ring.MatchesAny(checks) {
		return fmt.Errorf("%w: it holds accounts written under a root secret of key id %s, and the configured root secrets "+
			"have key id %s: restore the root secret of key id %s", ErrSecretMismatch, keyIDList(checks), a.ring.IDs(), keyIDList(checks))
	}
	signer := a.ring.Signer()
	if err := ks.AddKeyCheck(ctx, signer.ID, signer.Check); err != nil {
		return fmt.Errorf("%w: key checks: %w", ErrStoreUnavailable, err)
	}
	return nil
}

// keyIDList writes the key ids of byID, sorted, as "a", "a or b", or
// "a, b or c": the root secrets an operator may restore, any one of which
// opens the store.
func keyIDList[V any](byID map[string]V) string {
	ids := slices.Sorted(maps.Keys(byID))
	if len(ids) < 2 {
		return strings.Join(ids, "")
	}
	return strings.Join(ids[:len(ids)-1], ", ") + " or " + ids[len(ids)-1]
}
