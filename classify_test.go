package nmauth_test

import (
	"context"
	"errors"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/internal/hashfmt"
	"github.com/nmauth/nmauth/internal/secret"
)

// TestLoginClassifiesOnce: a login prepares and classifies the secret it
// is given once, at the door, and identifies the format of the stored
// credential once: for users and hosts, a machine secret or a password,
// right or wrong, and none for an account that does not exist. A login
// granted from the cache of machine credentials identifies nothing.
func TestLoginClassifiesOnce(t *testing.T) {
	const machine = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXQ" // 32 base32 characters, as netclient draws
	var classified, identified atomic.Int64
	defer secret.Observe(func() { classified.Add(1) })()
	defer hashfmt.Observe(func() { identified.Add(1) })()
	ctx := nmauth.WithClientAddr(context.Background(), netip.MustParseAddr("192.0.2.7"))

	for _, cached := range []bool{false, true} {
		f := newFixture(t, func(c *nmauth.Config) {
			if !cached {
				c.StatusCacheTTL = -1
			}
		})
		f.addUser("alice", "alice-password-1")
		f.addHost("host-m", "", machine)
		f.addHost("host-p", "", "host-password-1")
		for _, tc := range []struct {
			name       string
			login      func() error
			identified int64
		}{
			{"user, right", func() error { _, err := f.auth.LoginUser(ctx, "alice", "alice-password-1"); return err }, 1},
			{"user, wrong", func() error { _, err := f.auth.LoginUser(ctx, "alice", "alice-password-2"); return err }, 1},
			{"user, unknown", func() error { _, err := f.auth.LoginUser(ctx, "nobody", "alice-password-1"); return err }, 0},
			{"host, machine secret, right", func() error { _, err := f.auth.LoginHost(ctx, "host-m", "", machine); return err }, 1},
			{"host, machine secret, right again", func() error { _, err := f.auth.LoginHost(ctx, "host-m", "", machine); return err }, 1},
			{"host, machine secret, wrong", func() error {
				_, err := f.auth.LoginHost(ctx, "host-m", "", "KBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXQ")
				return err
			}, 1},
			{"host, password, right", func() error { _, err := f.auth.LoginHost(ctx, "host-p", "", "host-password-1"); return err }, 1},
			{"host, password, wrong", func() error { _, err := f.auth.LoginHost(ctx, "host-p", "", "host-password-2"); return err }, 1},
			{"host, unknown, machine secret", func() error { _, err := f.auth.LoginHost(ctx, "host-x", "", machine); return err }, 0},
			{"host, unknown, password", func() error { _, err := f.auth.LoginHost(ctx, "host-x", "", "host-password-1"); return err }, 0},
		} {
			classified.Store(0)
			identified.Store(0)
			err := tc.login()
			if err != nil && !errors.Is(err, nmauth.ErrInvalidCredentials) {
				t.Fatalf("%s (cache %v): %v", tc.name, cached, err)
			}
			want := tc.identified
			if cached && tc.name == "host, machine secret, right again" {
				// The cache holds what the logins before read: it grants
				// this one without a read.
				want = 0
			}
			if c, i := classified.Load(), identified.Load(); c != 1 || i != want {
				t.Errorf("%s (cache %v): %d classifications and %d identifications, want 1 and %d", tc.name, cached, c, i, want)
			}
		}
	}
}
