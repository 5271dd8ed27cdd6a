package nmauth_test

import (
	"context"
	"errors"
	"net/http"
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

// TestRefusedNodeLoginIsNoFailure: a host that keeps asking, with its
// right password, for a network it is not a member of (or while the
// membership hook fails) is refused each time, but none of it counts as a
// failed login: its host logins from the same address still answer 200,
// never 429, and its failure counters stay at zero.
func TestRefusedNodeLoginIsNoFailure(t *testing.T) {
	f := newFixture(t, func(c *nmauth.Config) {
		c.NodeMember = func(_ context.Context, network, _ string) (bool, error) {
			if network == "broken" {
				return false, errors.New("membership table unreadable")
			}
			return false, nil
		}
	})
	f.addHost(testHostIDs[0], "", "host-password-1")
	body := map[string]string{"id": testHostIDs[0], "password": "host-password-1"}
	for _, tc := range []struct {
		network string
		status  int
	}{{"office", http.StatusForbidden}, {"broken", http.StatusServiceUnavailable}} {
		t.Run(tc.network, func(t *testing.T) {
			for range 10 {
				wantError(t, f.do("/api/nodes/"+tc.network+"/authenticate", "", body), tc.status)
			}
			wantStatus(t, f.do("/api/hosts/adm/authenticate", "", body), http.StatusOK)
			h, err := f.store.GetHost(context.Background(), testHostIDs[0])
			if err != nil {
				t.Fatal(err)
			}
			if nmauth.StateOf(&h.State).PasswordFailures != 0 {
				t.Errorf("PasswordFailures = %d after refused node logins with the right password, want 0", nmauth.StateOf(&h.State).PasswordFailures)
			}
			for _, c := range nmauth.StateOf(&h.State).PasswordClients {
				if c.Failures != 0 || !c.BlockedUntil.IsZero() {
					t.Errorf("client %s: %d failures, blocked until %v, want none", c.Client, c.Failures, c.BlockedUntil)
				}
			}
		})
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

// TestHostLifecycle walks a host through the same changes a user has:
// each revoking change kills the tokens it held, node tokens included.
func TestHostLifecycle(t *testing.T) {
	members := func(context.Context, string, string) (bool, error) { return true, nil }
	f := newFixture(t, func(c *nmauth.Config) { c.NodeMember = members })
	id := testHostIDs[0]
	f.addHost(id, "", "host-password-1")
	ctx := context.Background()
	tokens := func(password string) []string {
		t.Helper()
		h, err := f.auth.LoginHost(ctx, id, "", password)
		if err != nil {
			t.Fatalf("LoginHost: %v", err)
		}
		n, err := f.auth.LoginNode(ctx, "home", id, "", password)
		if err != nil {
			t.Fatalf("LoginNode: %v", err)
		}
		return []string{h.AuthToken, n.AuthToken}
	}
	wantDead := func(step string, toks []string) {
		t.Helper()
		for _, tok := range toks {
			if _, err := f.auth.CheckBearer(ctx, tok); !errors.Is(err, nmauth.ErrUnauthenticated) {
				t.Errorf("after %s a token from before checks with %v, want ErrUnauthenticated", step, err)
			}
		}
	}

	held := tokens("host-password-1")
	if err := f.auth.Admin().RevokeHostTokens(ctx, id); err != nil {
		t.Fatal(err)
	}
	wantDead("RevokeHostTokens", held)

	held = tokens("host-password-1")
	if err := f.auth.Admin().SetHostPassword(ctx, id, "host-password-2"); err != nil {
		t.Fatal(err)
	}
	wantDead("SetHostPassword", held)
	if _, err := f.auth.LoginHost(ctx, id, "", "host-password-1"); !errors.Is(err, nmauth.ErrInvalidCredentials) {
		t.Errorf("old password after SetHostPassword: %v, want ErrInvalidCredentials", err)
	}
	if err := f.auth.Admin().SetHostPassword(ctx, id, "short"); !errors.Is(err, nmauth.ErrInvalidPassword) {
		t.Errorf("SetHostPassword with a short password: %v, want ErrInvalidPassword", err)
	}

	held = tokens("host-password-2")
	if err := f.auth.Admin().DisableHost(ctx, id); err != nil {
		t.Fatal(err)
	}
	wantDead("DisableHost", held)
	if _, err := f.auth.LoginHost(ctx, id, "", "host-password-2"); !errors.Is(err, nmauth.ErrInvalidCredentials) {
		t.Errorf("login of a disabled host: %v, want ErrInvalidCredentials", err)
	}
	if err := f.auth.Admin().EnableHost(ctx, id); err != nil {
		t.Fatal(err)
	}
	held = tokens("host-password-2")
	for _, tok := range held {
		if _, err := f.auth.CheckBearer(ctx, tok); err != nil {
			t.Errorf("token after EnableHost: %v", err)
		}
	}
	if err := f.auth.Admin().EnableHost(ctx, testHostIDs[1]); !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("EnableHost of an unknown host: %v, want ErrNotFound", err)
	}
}

// TestDisabledHostNodeLoginAnswersAsAWrongPassword checks that node
// membership cannot tell a right password of a disabled host from a wrong
// one: both are refused as invalid credentials, not as forbidden.
func TestDisabledHostNodeLoginAnswersAsAWrongPassword(t *testing.T) {
	f := newFixture(t, func(c *nmauth.Config) {
		c.NodeMember = func(context.Context, string, string) (bool, error) { return false, nil }
	})
	f.addHost(testHostIDs[0], "", "host-password-1")
	ctx := context.Background()
	if err := f.auth.Admin().DisableHost(ctx, testHostIDs[0]); err != nil {
		t.Fatal(err)
	}
	for _, password := range []string{"host-password-1", "wrong-password"} {
		_, err := f.auth.LoginNode(ctx, "home", testHostIDs[0], "", password)
		if !errors.Is(err, nmauth.ErrInvalidCredentials) || errors.Is(err, nmauth.ErrForbidden) {
			t.Errorf("node login of a disabled host that is no member, password %q: %v, want ErrInvalidCredentials", password, err)
		}
	}
}

// TestOneFormOfHostID gives a UUID in upper case, lower case and mixed to
// every method that takes a host id: each reaches the one host, the
// membership hook is asked with the form PrepareHostID gives, and a node
// token names that form.
func TestOneFormOfHostID(t *testing.T) {
	const lower = "8d0f3b2a-5c6e-4f71-9a3b-2c4d6e8f0a11"
	const upper = "8D0F3B2A-5C6E-4F71-9A3B-2C4D6E8F0A11"
	const mixed = "8d0F3b2A-5c6E-4f71-9A3b-2C4d6E8f0A11"
	if got, err := nmauth.PrepareHostID(upper); err != nil || got != lower {
		t.Fatalf("PrepareHostID(%q) = %q, %v, want %q", upper, got, err, lower)
	}
	if got, _ := nmauth.PrepareHostID("Host-A"); got != "Host-A" {
		t.Errorf("PrepareHostID(Host-A) = %q: an id that is no UUID keeps its case", got)
	}
	// The application keeps its memberships under prepared ids.
	member, _ := nmauth.PrepareHostID(upper)
	var asked []string
	f := newFixture(t, func(c *nmauth.Config) {
		c.NodeMember = func(_ context.Context, network, hostID string) (bool, error) {
			asked = append(asked, hostID)
			return network == "home" && hostID == member, nil
		}
	})
	ctx := context.Background()
	f.addHost(upper, "", "host-password-1")
	if err := f.auth.Admin().CreateHost(ctx, lower, "", "host-password-2"); !errors.Is(err, nmauth.ErrExists) {
		t.Fatalf("CreateHost of the lower-case spelling after the upper-case = %v, want ErrExists", err)
	}
	for _, id := range []string{lower, upper, mixed} {
		out, err := f.auth.LoginHost(ctx, id, "", "host-password-1")
		if err != nil || out.ID != lower {
			t.Errorf("LoginHost(%q) = %+v, %v, want host %s", id, out, err, lower)
		}
		node, err := f.auth.LoginNode(ctx, "home", id, "", "host-password-1")
		if err != nil || node.ID != lower {
			t.Fatalf("LoginNode(%q) = %+v, %v, want node %s", id, node, err, lower)
		}
		if p := mustCheck(t, f, node.AuthToken); p.Name != lower {
			t.Errorf("LoginNode(%q): node token names %q", id, p.Name)
		}
		tok, err := f.auth.IssueNodeToken(ctx, "home", id)
		if err != nil {
			t.Fatal(err)
		}
		if p := mustCheck(t, f, tok); p.Name != lower {
			t.Errorf("IssueNodeToken(%q): node token names %q, want %q", id, p.Name, lower)
		}
	}
	for _, id := range asked {
		if id != lower {
			t.Errorf("NodeMember asked about %q, want %q", id, lower)
		}
	}
	if err := f.auth.Admin().DisableHost(ctx, mixed); err != nil {
		t.Fatal(err)
	}
	if _, err := f.auth.LoginHost(ctx, lower, "", "host-password-1"); !errors.Is(err, nmauth.ErrInvalidCredentials) {
		t.Errorf("LoginHost after DisableHost(%q) = %v, want ErrInvalidCredentials", mixed, err)
	}
}
