package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/internal/state"
)

// TestGetHostLogin: on SQLite and PostgreSQL, the lean read of a host
// login returns what GetHost does but CreatedAt, with and without client
// failures, and ErrNotFound for a missing host.
func TestGetHostLogin(t *testing.T) {
	for _, b := range sqlBackends {
		t.Run(b.name, func(t *testing.T) {
			if b.dialect == nmauth.DialectPostgres {
				postgresDSN(t)
			}
			ctx := context.Background()
			s := newSQLStore(t, b.fresh(t)(t), b.dialect)
			blocked := time.Unix(1_900_000_000, 5).UTC()
			hosts := []nmauth.Host{
				{ID: "bare", PasswordHash: "$nmauth-hmac-sha256$k=0011223344556677$AAAA", CreatedAt: time.Unix(1_800_000_000, 0).UTC(),
					State: state.New[nmauth.State](state.User{Account: state.Account{Generation: 1 << 63}})},
				{ID: "full", MACAddress: "aa:bb:cc:dd:ee:ff", PasswordHash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA", Disabled: true,
					CreatedAt: time.Unix(1_800_000_000, 0).UTC(),
					State: state.New[nmauth.State](state.User{Account: state.Account{PasswordFailures: 7, PasswordBlockedUntil: blocked, Generation: 42,
						PasswordClients: []state.Client{{Client: "192.0.2.1", Failures: 3, BlockedUntil: blocked}, {Client: "2001:db8::/64", Known: true}}}})},
			}
			for _, h := range hosts {
				if err := s.CreateHost(ctx, h); err != nil {
					t.Fatal(err)
				}
				full, err := s.GetHost(ctx, h.ID)
				if err != nil {
					t.Fatal(err)
				}
				lean, err := s.GetHostLogin(ctx, h.ID)
				if err != nil {
					t.Fatal(err)
				}
				full.CreatedAt = time.Time{}
				if !sameHost(full, lean) {
					t.Errorf("%s: GetHostLogin = %+v\nGetHost = %+v", h.ID, lean, full)
				}
			}
			if _, err := s.GetHostLogin(ctx, "missing"); !errors.Is(err, nmauth.ErrNotFound) {
				t.Errorf("missing host: %v, want ErrNotFound", err)
			}
		})
	}
}

func sameHost(a, b nmauth.Host) bool {
	if len(state.Of(a.State).PasswordClients) != len(state.Of(b.State).PasswordClients) {
		return false
	}
	for i := range state.Of(a.State).PasswordClients {
		x, y := state.Of(a.State).PasswordClients[i], state.Of(b.State).PasswordClients[i]
		if x.Client != y.Client || x.Failures != y.Failures || x.Known != y.Known || !x.BlockedUntil.Equal(y.BlockedUntil) {
			return false
		}
	}
	return a.ID == b.ID && a.MACAddress == b.MACAddress && a.PasswordHash == b.PasswordHash && a.Disabled == b.Disabled &&
		a.CreatedAt.Equal(b.CreatedAt) && state.Of(a.State).PasswordFailures == state.Of(b.State).PasswordFailures &&
		state.Of(a.State).PasswordBlockedUntil.Equal(state.Of(b.State).PasswordBlockedUntil) && state.Of(a.State).Generation == state.Of(b.State).Generation && len(a.Broken) == len(b.Broken)
}
