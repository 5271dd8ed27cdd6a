package attempt

import (
	"fmt"
	"testing"
	"time"

	"github.com/nmauth/nmauth/internal/state"
)

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		n, free int
		ceiling time.Duration
		want    time.Duration
	}{
		{0, 5, time.Minute, 0},
		{4, 5, time.Minute, 0},
		{5, 5, time.Minute, time.Second},
		{6, 5, time.Minute, 2 * time.Second},
		{10, 5, time.Minute, 32 * time.Second},
		{11, 5, time.Minute, time.Minute},
		{1 << 40, 5, time.Minute, time.Minute},
		{100, 100, 15 * time.Minute, time.Second},
	} {
		if got := Backoff(tc.n, tc.free, tc.ceiling); got != tc.want {
			t.Errorf("Backoff(%d, %d, %v) = %v, want %v", tc.n, tc.free, tc.ceiling, got, tc.want)
		}
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if got := AddDelay(now, 0); !got.IsZero() {
		t.Errorf("AddDelay(now, 0) = %v, want the zero time", got)
	}
	if got := AddDelay(now, time.Second); !got.Equal(now.Add(time.Second)) {
		t.Errorf("AddDelay(now, 1s) = %v", got)
	}
}

// TestClientBackoff: one address's failures slow only that address, the
// free ones without a wait; a right login forgets them and makes it known.
func TestClientBackoff(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var acc state.Account
	for i := range ClientFreeFailures {
		if wait := Take(&acc, "192.0.2.1", now); wait != 0 {
			t.Fatalf("attempt %d waits %v", i+1, wait)
		}
	}
	if wait := Take(&acc, "192.0.2.1", now); wait != time.Second {
		t.Fatalf("attempt past the free ones waits %v, want 1s", wait)
	}
	if wait := Wait(&acc, "192.0.2.2", now); wait > 0 {
		t.Fatalf("another address waits %v", wait)
	}
	if acc.PasswordFailures != ClientFreeFailures {
		t.Fatalf("PasswordFailures = %d, want %d", acc.PasswordFailures, ClientFreeFailures)
	}
	if !GrantChanges(&acc, "192.0.2.2") {
		t.Fatal("a grant after failures changes nothing")
	}
	Grant(&acc, "192.0.2.2")
	if acc.PasswordFailures != 0 || !Known(acc.PasswordClients, "192.0.2.2") || Known(acc.PasswordClients, "192.0.2.1") {
		t.Fatalf("after a grant: %+v", acc)
	}
	if GrantChanges(&acc, "192.0.2.2") {
		t.Fatal("a second grant would change the account")
	}
	Reset(&acc)
	if acc.PasswordFailures != 0 || !acc.PasswordBlockedUntil.IsZero() || acc.PasswordClients != nil {
		t.Fatalf("after a reset: %+v", acc)
	}
}

// TestAccountCeiling: past the ceiling every unknown address waits, a
// known one does not.
func TestAccountCeiling(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var acc state.Account
	Grant(&acc, "owner")
	for i := range AccountCeiling {
		if wait := Take(&acc, fmt.Sprint("attacker", i), now); wait != 0 {
			t.Fatalf("attempt %d waits %v", i+1, wait)
		}
	}
	if wait := Wait(&acc, "newcomer", now); wait != time.Second {
		t.Fatalf("an unknown address waits %v past the ceiling, want 1s", wait)
	}
	if wait := Wait(&acc, "owner", now); wait > 0 {
		t.Fatalf("the known address waits %v", wait)
	}
}

// TestEntryKeepsKnown: past MaxClients a new address pushes out the oldest
// unknown one, never a known one while an unknown one is left.
func TestEntryKeepsKnown(t *testing.T) {
	var clients []state.Client
	Entry(&clients, "owner").Known = true
	for i := range 2 * MaxClients {
		Entry(&clients, fmt.Sprint("attacker", i))
	}
	if len(clients) != MaxClients || !Known(clients, "owner") {
		t.Fatalf("%d clients, owner known: %v", len(clients), Known(clients, "owner"))
	}
	if last := clients[len(clients)-1].Client; last != fmt.Sprint("attacker", 2*MaxClients-1) {
		t.Fatalf("newest entry is %q", last)
	}
	for i := range MaxClients {
		Entry(&clients, fmt.Sprint("known", i)).Known = true
	}
	if Known(clients, "owner") {
		t.Fatal("every address known: the oldest should have gone")
	}
}
