package integration

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/internal/state"
	"golang.org/x/crypto/bcrypt"
)

// TestMachineSecretsOverSQL: on SQLite and PostgreSQL, a host whose
// netclient-made secret was imported under bcrypt moves to the keyed
// digest at its first login; the digest checks on the other replica's
// handle, and a wrong secret is counted there.
func TestMachineSecretsOverSQL(t *testing.T) {
	for _, b := range sqlBackends {
		t.Run(b.name, func(t *testing.T) {
			fresh := b.fresh(t)
			stores := [2]*nmauth.SQLStore{newSQLStore(t, fresh(t), b.dialect), newSQLStore(t, fresh(t), b.dialect)}
			var auths [2]*nmauth.Authenticator
			for i, s := range stores {
				a, err := nmauth.New(nmauth.Config{Store: s, Secrets: [][]byte{[]byte("machine-secrets-over-sql-0123456789")}, ClientRate: -1})
				if err != nil {
					t.Fatal(err)
				}
				auths[i] = a
			}
			raw := make([]byte, 32)
			rand.Read(raw)
			secret := base32.StdEncoding.EncodeToString(raw)[:32]
			imported, err := bcrypt.GenerateFromPassword([]byte(secret), bcrypt.MinCost)
			if err != nil {
				t.Fatal(err)
			}
			ctx := nmauth.WithClientAddr(context.Background(), netip.MustParseAddr("192.0.2.7"))
			if err := stores[0].CreateHost(ctx, nmauth.Host{ID: "netclient-1", PasswordHash: string(imported), State: state.New[nmauth.State](state.User{Account: state.Account{Generation: 1}})}); err != nil {
				t.Fatal(err)
			}
			if _, err := auths[0].LoginHost(ctx, "netclient-1", "", secret); err != nil {
				t.Fatalf("first login: %v", err)
			}
			h, err := stores[1].GetHost(ctx, "netclient-1")
			if err != nil || !strings.HasPrefix(h.PasswordHash, "$nmauth-hmac-sha256$k=") {
				t.Fatalf("stored %.24q…, %v; want the machine-secret digest", h.PasswordHash, err)
			}
			got, err := auths[1].LoginHost(ctx, "netclient-1", "", secret)
			if err != nil {
				t.Fatalf("login on the other handle: %v", err)
			}
			if p, err := auths[0].CheckBearer(ctx, got.AuthToken); err != nil || p.Name != "netclient-1" {
				t.Errorf("CheckBearer = %+v, %v", p, err)
			}
			if _, err := auths[1].LoginHost(ctx, "netclient-1", "", strings.ToLower(secret)); !errors.Is(err, nmauth.ErrInvalidCredentials) {
				t.Errorf("wrong secret: %v", err)
			}
			if h, _ := stores[0].GetHost(ctx, "netclient-1"); state.Of(h.State).PasswordFailures != 1 {
				t.Errorf("%d failures stored, want 1", state.Of(h.State).PasswordFailures)
			}
		})
	}
}
