package nmauth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

// TestAuditEvents walks the flows that issue each audit event and checks
// that every event names its subject.
func TestAuditEvents(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.addUser("alice", "correct horse battery")

	f.loginUser("alice", "wrong password!")
	for range 4 {
		f.loginUser("alice", "wrong password!")
	}
	f.loginUser("alice", "correct horse battery") // throttled
	f.clock.Advance(time.Minute)
	_, codes := f.enroll("alice", f.userToken("alice", "correct horse battery"))
	f.initTOTP("alice", testMasterKey) // the master key is used
	pre := f.preAuthToken("alice", "correct horse battery")
	f.verifyTOTP("alice", pre, "000000")
	f.verifyTOTP("alice", pre, codes[0])
	if err := f.auth.Admin().ResetTOTP(ctx, "alice"); err != nil {
		t.Fatal(err)
	}

	for _, want := range []nmauth.EventType{
		nmauth.EventLoginFailed, nmauth.EventLoginThrottled, nmauth.EventLoginSucceeded,
		nmauth.EventTOTPEnabled, nmauth.EventMasterKeyUsed, nmauth.EventTOTPFailed,
		nmauth.EventRecoveryCodeUsed, nmauth.EventTokensRevoked,
	} {
		if f.events.count(want) == 0 {
			t.Errorf("no %s event", want)
		}
	}
	f.events.mu.Lock()
	defer f.events.mu.Unlock()
	for _, e := range f.events.events {
		if e.Name == "" || e.Kind == "" || e.Time.IsZero() {
			t.Errorf("event %+v lacks its subject or time", e)
		}
		if e.Type == nmauth.EventRecoveryCodeUsed && e.Remaining != 9 {
			t.Errorf("recovery code event says %d left, want 9", e.Remaining)
		}
	}
}

// TestAdminActionsAudited makes every administrative change, as the
// master key and as an administrator's user token, and requires an event
// of its own for each, naming the account changed and who changed it.
func TestAdminActionsAudited(t *testing.T) {
	master := nmauth.Principal{Kind: nmauth.KindMaster}
	admin := nmauth.Principal{Kind: nmauth.KindUser, Name: "root"}
	for _, actor := range []nmauth.Principal{master, admin} {
		t.Run(string(actor.Kind), func(t *testing.T) {
			f := newFixture(t)
			ctx := nmauth.WithActor(context.Background(), actor)
			a := f.auth
			ad := a.Admin()
			type want struct {
				typ  nmauth.EventType
				kind nmauth.PrincipalKind
				name string
			}
			var wants []want
			step := func(err error, typ nmauth.EventType, kind nmauth.PrincipalKind, name string) {
				t.Helper()
				if err != nil {
					t.Fatalf("%s: %v", typ, err)
				}
				wants = append(wants, want{typ, kind, name})
			}
			const host = "8d0f3b2a-5c6e-4f71-9a3b-2c4d6e8f0a11"
			step(ad.CreateUser(ctx, "alice", "correct horse battery"), nmauth.EventUserCreated, nmauth.KindUser, "alice")
			step(ad.DisableUser(ctx, "Alice"), nmauth.EventUserDisabled, nmauth.KindUser, "alice")
			step(ad.EnableUser(ctx, "alice"), nmauth.EventUserEnabled, nmauth.KindUser, "alice")
			step(ad.SetUserPassword(ctx, "alice", "another good password"), nmauth.EventUserPasswordSet, nmauth.KindUser, "alice")
			step(ad.ResetTOTP(ctx, "alice"), nmauth.EventTOTPReset, nmauth.KindUser, "alice")
			tok, _, err := a.CreateAccessToken(ctx, master, nmauth.AccessTokenRequest{Name: "ci", UserName: "alice"})
			step(err, nmauth.EventAccessTokenCreated, nmauth.KindUser, "alice")
			step(a.DeleteAccessToken(ctx, master, tok.ID), nmauth.EventAccessTokenRevoked, nmauth.KindUser, "alice")
			step(ad.DeleteUser(ctx, "alice"), nmauth.EventUserDeleted, nmauth.KindUser, "alice")
			step(ad.CreateHost(ctx, strings.ToUpper(host), "", "host-password-1"), nmauth.EventHostCreated, nmauth.KindHost, host)
			step(ad.DisableHost(ctx, host), nmauth.EventHostDisabled, nmauth.KindHost, host)
			step(ad.EnableHost(ctx, host), nmauth.EventHostEnabled, nmauth.KindHost, host)
			step(ad.SetHostPassword(ctx, host, "host-password-2"), nmauth.EventHostPasswordSet, nmauth.KindHost, host)
			step(ad.DeleteHost(ctx, host), nmauth.EventHostDeleted, nmauth.KindHost, host)

			f.events.mu.Lock()
			defer f.events.mu.Unlock()
			for _, w := range wants {
				var found []nmauth.Event
				for _, e := range f.events.events {
					if e.Type == w.typ {
						found = append(found, e)
					}
				}
				if len(found) != 1 {
					t.Errorf("%d %s events, want 1", len(found), w.typ)
					continue
				}
				e := found[0]
				// The access-token methods name the principal they are
				// given, the master key here, whoever the context names.
				wantActor := actor
				if w.typ == nmauth.EventAccessTokenCreated || w.typ == nmauth.EventAccessTokenRevoked {
					wantActor = master
					if e.TokenID != tok.ID {
						t.Errorf("%s names token %q, want %q", w.typ, e.TokenID, tok.ID)
					}
				}
				if e.Kind != w.kind || e.Name != w.name || e.ActorKind != wantActor.Kind || e.Actor != wantActor.Name {
					t.Errorf("%s: %+v, want %s %q changed by %s %q", w.typ, e, w.kind, w.name, wantActor.Kind, wantActor.Name)
				}
			}
		})
	}
}

// TestSecondFactorPendingIsNoLogin: a right password of a user with TOTP
// on is audited as a second factor still to come, not as a login; the
// login is the verify-totp that follows.
func TestSecondFactorPendingIsNoLogin(t *testing.T) {
	f := newFixture(t)
	f.addUser("alice", "correct horse battery")
	secret, _ := f.enroll("alice", f.userToken("alice", "correct horse battery"))
	logins := f.events.count(nmauth.EventLoginSucceeded)
	pre := f.preAuthToken("alice", "correct horse battery")
	if got := f.events.count(nmauth.EventLoginSucceeded); got != logins {
		t.Errorf("a password that earned a pre-auth token emitted %s", nmauth.EventLoginSucceeded)
	}
	if got := f.events.count(nmauth.EventLoginSecondFactorRequired); got != 1 {
		t.Errorf("%d %s events, want 1", got, nmauth.EventLoginSecondFactorRequired)
	}
	f.clock.Advance(30 * time.Second)
	wantStatus(t, f.verifyTOTP("alice", pre, f.code(secret, 0)), 200)
	if got := f.events.count(nmauth.EventTOTPVerified); got != 1 {
		t.Errorf("%d %s events after verify-totp, want 1", got, nmauth.EventTOTPVerified)
	}
	// IssueLogin, the first factor of single sign-on, says the same.
	if _, err := f.ext.Login(context.Background(), "alice"); err != nil {
		t.Fatal(err)
	}
	if got := f.events.count(nmauth.EventLoginSecondFactorRequired); got != 2 {
		t.Errorf("IssueLogin with TOTP on: %d %s events, want 2", got, nmauth.EventLoginSecondFactorRequired)
	}
}
