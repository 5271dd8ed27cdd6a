package nmauth_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/nmauth/nmauth"
)

func TestLoginNode(t *testing.T) {
	var asked atomic.Int64
	members := map[string]bool{"home/h1": true}
	f := newFixture(t, func(c *nmauth.Config) {
		c.NodeMember = func(_ context.Context, network, hostID string) (bool, error) {
			asked.Add(1)
			if network == "broken" {
				return false, errors.New("membership table unreadable")
			}
			return members[network+"/"+hostID], nil
		}
	})
	f.addHost("h1", "", "host-password-1")
	f.addHost("h2", "", "host-password-2")
	ctx := context.Background()

	out, err := f.auth.LoginNode(ctx, "home", "h1", "", "host-password-1")
	if err != nil {
		t.Fatalf("LoginNode of a member: %v", err)
	}
	if out.ID != "h1" || out.Network != "home" {
		t.Errorf("LoginNode = %+v, want id h1 in network home", out)
	}
	p, err := f.auth.CheckBearer(ctx, out.AuthToken)
	if err != nil {
		t.Fatalf("CheckBearer(node token): %v", err)
	}
	if p.Kind != nmauth.KindNode || p.Name != "h1" || p.Network != "home" {
		t.Errorf("principal = %+v, want node h1 of home", p)
	}

	tests := []struct {
		name, network, id, password string
		want                        error
		asks                        bool
	}{
		{"not a member", "office", "h1", "host-password-1", nmauth.ErrForbidden, true},
		{"another host", "home", "h2", "host-password-2", nmauth.ErrForbidden, true},
		{"wrong password", "home", "h1", "wrong-password", nmauth.ErrInvalidCredentials, false},
		{"unknown host", "home", "h9", "host-password-1", nmauth.ErrUnknownHost, false},
		{"malformed network", "a b", "h1", "host-password-1", nmauth.ErrInvalidNetwork, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := asked.Load()
			_, err := f.auth.LoginNode(ctx, tc.network, tc.id, "", tc.password)
			if !errors.Is(err, tc.want) {
				t.Fatalf("LoginNode = %v, want %v", err, tc.want)
			}
			if got := asked.Load() > before; got != tc.asks {
				t.Errorf("membership asked = %v, want %v", got, tc.asks)
			}
		})
	}

	if _, err := f.auth.LoginNode(ctx, "broken", "h1", "", "host-password-1"); err == nil ||
		errors.Is(err, nmauth.ErrInvalidCredentials) || errors.Is(err, nmauth.ErrForbidden) {
		t.Errorf("LoginNode with a failing membership hook = %v, want a server fault", err)
	}
}

func TestLoginNodeWithoutMembershipHook(t *testing.T) {
	f := newFixture(t)
	f.addHost("h1", "", "host-password-1")
	if _, err := f.auth.LoginNode(context.Background(), "home", "h1", "", "host-password-1"); !errors.Is(err, nmauth.ErrForbidden) {
		t.Fatalf("LoginNode without Config.NodeMember = %v, want ErrForbidden", err)
	}
}

func TestUnknownHostMatchesInvalidCredentials(t *testing.T) {
	f := newFixture(t)
	_, err := f.auth.LoginHost(context.Background(), "nobody", "", "some-password")
	if !errors.Is(err, nmauth.ErrUnknownHost) || !errors.Is(err, nmauth.ErrInvalidCredentials) {
		t.Fatalf("LoginHost of an unknown host = %v, want ErrUnknownHost matching ErrInvalidCredentials", err)
	}
	if r := f.do("/api/hosts/adm/authenticate", "", map[string]string{"id": "nobody", "password": "some-password"}); r.status != 401 {
		t.Errorf("spec profile answers an unknown host %d, want 401 like a wrong password", r.status)
	}
}
