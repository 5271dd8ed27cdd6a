package nmauth_test

import (
	"context"
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
	if err := f.auth.ResetTOTP(ctx, "alice"); err != nil {
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
