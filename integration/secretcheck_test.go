package integration

import (
	"context"
	crand "crypto/rand"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/nmauth/nmauth"
)

// TestCheckSecretsSealedKeys: on SQLite and PostgreSQL, the root-secret
// check at start counts the TOTP secrets by the key they are sealed under
// in one query of that column, so a broken JSON column of the same user
// stops nothing: a secret that is not configured is named, and once it is
// configured after the first, the check passes.
func TestCheckSecretsSealedKeys(t *testing.T) {
	for _, b := range sqlBackends {
		t.Run(b.name, func(t *testing.T) {
			if b.dialect == nmauth.DialectPostgres {
				postgresDSN(t)
			}
			ctx := context.Background()
			db := b.fresh(t)(t)
			store := newSQLStore(t, db, b.dialect)
			oldSecret, newSecret := randomSecret(t), randomSecret(t)
			now := time.Now().Truncate(30 * time.Second)
			old := authWithSecrets(t, store, now, oldSecret)
			master := nmauth.Principal{Kind: nmauth.KindMaster}
			for _, name := range []string{"alice", "bob"} {
				if err := old.Admin().CreateUser(ctx, name, "a long enough password"); err != nil {
					t.Fatal(err)
				}
				e, err := old.InitTOTP(ctx, master, name)
				if err != nil {
					t.Fatal(err)
				}
				u, err := url.Parse(e.URL)
				if err != nil {
					t.Fatal(err)
				}
				code, err := totp.GenerateCodeCustom(u.Query().Get("secret"), now, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := old.CompleteTOTP(ctx, master, name, e.URL, e.Signature, code, ""); err != nil {
					t.Fatalf("CompleteTOTP(%s): %v", name, err)
				}
			}
			if err := old.Admin().CreateUser(ctx, "carol", "a long enough password"); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec("UPDATE nmauth_users SET recovery_codes = '{bad' WHERE name = 'bob'"); err != nil {
				t.Fatal(err)
			}

			err := authWithSecrets(t, store, now, newSecret).CheckSecrets(ctx)
			if !errors.Is(err, nmauth.ErrSecretMismatch) || !strings.Contains(err.Error(), "none of the 2 stored TOTP secrets") {
				t.Fatalf("CheckSecrets with only a new secret: %v; want ErrSecretMismatch naming the 2 sealed secrets", err)
			}
			if err := authWithSecrets(t, store, now, newSecret, oldSecret).CheckSecrets(ctx); err != nil {
				t.Fatalf("CheckSecrets with the old secret after the new: %v", err)
			}
		})
	}
}

func randomSecret(t *testing.T) []byte {
	t.Helper()
	s := make([]byte, 32)
	if _, err := crand.Read(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// authWithSecrets is an Authenticator over store with the root secrets
// given, the first signing, and a clock standing at now.
func authWithSecrets(t *testing.T, store nmauth.Store, now time.Time, secrets ...[]byte) *nmauth.Authenticator {
	t.Helper()
	a, err := nmauth.New(nmauth.Config{
		Store:   store,
		Secrets: secrets,
		Now:     func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}
