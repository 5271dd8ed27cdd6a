package nmauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

// TestListAccounts pages through users and hosts and checks what each
// entry tells, and that no entry carries a hash or a secret.
func TestListAccounts(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	for _, name := range []string{"carol", "alice", "bob"} {
		f.addUser(name, "correct horse battery")
	}
	// bob turns TOTP on and spends a recovery code.
	login, err := f.auth.LoginUser(ctx, "bob", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	bobP, err := f.auth.CheckBearer(ctx, login.AuthToken)
	if err != nil {
		t.Fatal(err)
	}
	e, err := f.auth.InitTOTP(ctx, bobP, "bob")
	if err != nil {
		t.Fatal(err)
	}
	otpURL, err := url.Parse(e.URL)
	if err != nil {
		t.Fatal(err)
	}
	done, err := f.auth.CompleteTOTP(ctx, bobP, "bob", e.URL, e.Signature, f.code(otpURL.Query().Get("secret"), 0), "")
	if err != nil {
		t.Fatal(err)
	}
	if login, err = f.auth.LoginUser(ctx, "bob", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.auth.VerifyTOTP(ctx, login.PreAuthToken, "bob", done.RecoveryCodes[0]); err != nil {
		t.Fatal(err)
	}
	if err := f.auth.Admin().DisableUser(ctx, "carol"); err != nil {
		t.Fatal(err)
	}
	lockedUntil := f.clock.Now().Add(10 * time.Minute)
	if err := f.store.UpdateUser(ctx, "alice", func(u *nmauth.User) error {
		nmauth.StateOf(&u.State).PasswordBlockedUntil = lockedUntil
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	first, err := f.auth.Admin().ListUsers(ctx, "", 2)
	if err != nil {
		t.Fatal(err)
	}
	rest, err := f.auth.Admin().ListUsers(ctx, first[len(first)-1].Name, 2)
	if err != nil {
		t.Fatal(err)
	}
	users := append(first, rest...)
	if len(first) != 2 || len(users) != 3 {
		t.Fatalf("pages of %d and %d users, want 2 and 1", len(first), len(rest))
	}
	alice, bob, carol := users[0], users[1], users[2]
	if alice.Name != "alice" || bob.Name != "bob" || carol.Name != "carol" {
		t.Fatalf("users %q %q %q, want alice bob carol", alice.Name, bob.Name, carol.Name)
	}
	if !alice.LockedUntil.Equal(lockedUntil) || !bob.LockedUntil.IsZero() {
		t.Errorf("locked until: alice %v (want %v), bob %v (want zero)", alice.LockedUntil, lockedUntil, bob.LockedUntil)
	}
	if !bob.TOTPEnabled || bob.RecoveryCodesLeft != 9 || alice.TOTPEnabled || alice.RecoveryCodesLeft != 0 {
		t.Errorf("TOTP: bob %+v, alice %+v", bob, alice)
	}
	if !carol.Disabled || alice.Disabled || carol.CreatedAt.IsZero() {
		t.Errorf("carol %+v, alice %+v", carol, alice)
	}
	// Past the lock, it is no longer reported.
	f.clock.Advance(11 * time.Minute)
	if again, _ := f.auth.Admin().ListUsers(ctx, "", 1); !again[0].LockedUntil.IsZero() {
		t.Errorf("alice still locked until %v after it ended", again[0].LockedUntil)
	}

	f.addHost("h2", "", "host-password-2")
	f.addHost("h1", "02:00:00:00:00:01", "host-password-1")
	if err := f.auth.Admin().DisableHost(ctx, "h2"); err != nil {
		t.Fatal(err)
	}
	hosts, err := f.auth.Admin().ListHosts(ctx, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hosts) != 2 || hosts[0].ID != "h1" || hosts[0].MACAddress != "02:00:00:00:00:01" || hosts[0].Disabled ||
		hosts[1].ID != "h2" || !hosts[1].Disabled {
		t.Errorf("hosts %+v", hosts)
	}
	if more, err := f.auth.Admin().ListHosts(ctx, "h2", 10); err != nil || len(more) != 0 {
		t.Errorf("page after the last host: %v, %v", more, err)
	}

	listed, _ := json.Marshal([]any{users, hosts})
	stored, _ := f.store.GetUser(ctx, "bob")
	for _, secret := range append([]string{"argon2id", string(stored.TOTPSecret)}, stored.RecoveryCodes...) {
		if strings.Contains(string(listed), secret) {
			t.Errorf("a listing carries %q", secret)
		}
	}
}

// TestNodeTokenValid checks that Config.NodeTokenValid revokes node
// tokens from IssueNodeToken, and only those.
func TestNodeTokenValid(t *testing.T) {
	revoked := map[string]bool{}
	var asked []nmauth.Principal
	f := newFixture(t, memberOf, func(c *nmauth.Config) {
		c.NodeTokenValid = func(_ context.Context, p nmauth.Principal) (bool, error) {
			asked = append(asked, p)
			if p.Name == "broken" {
				return false, errors.New("node table unreadable")
			}
			return !revoked[p.Network+"/"+p.Name], nil
		}
	})
	ctx := t.Context()
	issue := func(network, node string) string {
		t.Helper()
		tok, err := f.auth.IssueNodeToken(ctx, network, node)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	tok := issue("net-1", "node-7")
	if p, err := f.auth.CheckBearer(ctx, tok); err != nil || p.Name != "node-7" {
		t.Fatalf("a valid node token: %+v, %v", p, err)
	}
	revoked["net-1/node-7"] = true
	if _, err := f.auth.CheckBearer(ctx, tok); !errors.Is(err, nmauth.ErrUnauthenticated) {
		t.Fatalf("a revoked node token: %v, want ErrUnauthenticated", err)
	}
	// The same node in another network is another token.
	if _, err := f.auth.CheckBearer(ctx, issue("net-2", "node-7")); err != nil {
		t.Fatalf("node-7 of net-2: %v", err)
	}
	if _, err := f.auth.CheckBearer(ctx, issue("net-1", "broken")); err == nil || errors.Is(err, nmauth.ErrUnauthenticated) {
		t.Fatalf("a failing hook: %v, want an error other than ErrUnauthenticated", err)
	}

	// Host tokens, user tokens and node tokens from LoginNode are not
	// asked about.
	n := len(asked)
	f.addHost(testHostIDs[0], "", "host-password-1")
	f.addUser("alice", "correct horse battery")
	node, err := f.auth.LoginNode(ctx, "net-1", testHostIDs[0], "", "host-password-1")
	if err != nil {
		t.Fatal(err)
	}
	host, err := f.auth.LoginHost(ctx, testHostIDs[0], "", "host-password-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{node.AuthToken, host.AuthToken, f.userToken("alice", "correct horse battery")} {
		if _, err := f.auth.CheckBearer(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	if len(asked) != n {
		t.Errorf("the hook was asked about %v", asked[n:])
	}
}
