package nmauth_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/nmauth/nmauth"
)

// TestExtensionNeedsRegistration: an Extension that no Config registered
// mints nothing and writes no event, even for a user who exists; one is
// registered with one Authenticator only, and a Config that holds a nil
// or repeated one is refused by New without registering any.
func TestExtensionNeedsRegistration(t *testing.T) {
	f := newFixture(t)
	f.addUser("alice", "correct horse battery")
	ctx := context.Background()
	loose := new(nmauth.Extension)
	if loose.Authenticator() != nil {
		t.Error("an unregistered Extension names an Authenticator")
	}
	if out, err := loose.Login(ctx, "alice"); !errors.Is(err, nmauth.ErrNotRegistered) || out.AuthToken != "" {
		t.Errorf("Login = %+v, %v; want ErrNotRegistered", out, err)
	}
	if out, err := loose.LoginVerified(ctx, "alice"); !errors.Is(err, nmauth.ErrNotRegistered) || out.AuthToken != "" {
		t.Errorf("LoginVerified = %+v, %v; want ErrNotRegistered", out, err)
	}
	f.enroll("alice", f.userToken("alice", "correct horse battery"))
	pre := f.preAuthToken("alice", "correct horse battery")
	if _, err := loose.CheckPreAuth(ctx, pre, "alice"); !errors.Is(err, nmauth.ErrNotRegistered) {
		t.Errorf("CheckPreAuth: %v, want ErrNotRegistered", err)
	}
	if out, err := loose.RedeemPreAuth(ctx, pre, "alice", nil); !errors.Is(err, nmauth.ErrNotRegistered) || out.AuthToken != "" {
		t.Errorf("RedeemPreAuth = %+v, %v; want ErrNotRegistered", out, err)
	}
	before := f.events.count(nmauth.EventLoginSucceeded) + f.events.count("app.event")
	loose.Emit(ctx, nmauth.Event{Type: "app.event", Kind: nmauth.KindUser, Name: "alice"})
	rec := httptest.NewRecorder()
	loose.WriteUserLogin(rec, nmauth.UserLogin{UserName: "alice", AuthToken: "tok"})
	if rec.Code != 500 || rec.Body.Len() > 1 {
		t.Errorf("WriteUserLogin of an unregistered Extension wrote %d %q, want a bare 500", rec.Code, rec.Body)
	}
	if after := f.events.count(nmauth.EventLoginSucceeded) + f.events.count("app.event"); after != before {
		t.Errorf("an unregistered Extension wrote %d events", after-before)
	}

	cfg := func(exts ...*nmauth.Extension) nmauth.Config {
		return nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{testSecret(2)}, Extensions: exts}
	}
	if _, err := nmauth.New(cfg(f.ext)); err == nil {
		t.Error("an Extension registered with a second Authenticator")
	}
	fresh := new(nmauth.Extension)
	for name, c := range map[string]nmauth.Config{
		"a nil Extension": cfg(fresh, nil),
		"one twice":       cfg(fresh, fresh),
	} {
		if _, err := nmauth.New(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if fresh.Authenticator() != nil {
			t.Fatalf("%s: refused, but registered the other", name)
		}
	}
	if _, err := nmauth.New(cfg(fresh)); err != nil || fresh.Authenticator() == nil {
		t.Errorf("registering after the refusals: %v", err)
	}
}
