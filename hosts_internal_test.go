package nmauth

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nmauth/nmauth/internal/state"
)

// TestMACPolicy: a changed MAC address is never a wrong credential (issue
// 9 item 3, issue 14 finding 11). By default it logs in and is audited;
// with RefuseMACChange it is refused with 403, and so is an omitted MAC
// when the host has one registered.
func TestMACPolicy(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		t.Run(fmt.Sprintf("refuse=%t", refuse), func(t *testing.T) {
			var events []EventType
			clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
			a := quickAuth(t, NewMemoryStore(), clock, func(c *Config) {
				c.RefuseMACChange = refuse
				c.OnEvent = func(_ context.Context, e Event) { events = append(events, e.Type) }
			})
			ctx := context.Background()
			if err := a.Admin().CreateHost(ctx, "host-1", "aa:bb:cc:dd:ee:01", "right password"); err != nil {
				t.Fatal(err)
			}
			for _, mac := range []string{"aa:bb:cc:dd:ee:02", ""} {
				events = nil
				_, err := a.LoginHost(ctx, "host-1", mac, "right password")
				switch {
				case errors.Is(err, ErrInvalidCredentials):
					t.Fatalf("MAC %q: answered as a wrong credential", mac)
				case refuse && !errors.Is(err, ErrForbidden):
					t.Errorf("MAC %q: %v, want ErrForbidden", mac, err)
				case !refuse && err != nil:
					t.Errorf("MAC %q: %v, want a login", mac, err)
				}
				want := EventLoginSucceeded
				if refuse {
					want = EventHostMACRefused
				} else if mac != "" && !slices.Contains(events, EventHostMACChanged) {
					t.Errorf("MAC %q: events %v, want %s", mac, events, EventHostMACChanged)
				}
				if !slices.Contains(events, want) {
					t.Errorf("MAC %q: events %v, want %s", mac, events, want)
				}
			}
			if _, err := a.LoginHost(ctx, "host-1", "aa:bb:cc:dd:ee:02", "wrong password"); !errors.Is(err, ErrInvalidCredentials) {
				t.Errorf("wrong password from another MAC: %v, want ErrInvalidCredentials", err)
			}
		})
	}
}

// TestRefusedMACIsNoFailure checks that a right password refused for its
// MAC address is not counted against the host: ten refusals from one
// address leave it free to log in from its registered MAC.
func TestRefusedMACIsNoFailure(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	store := NewMemoryStore()
	a := quickAuth(t, store, clock, func(c *Config) { c.RefuseMACChange = true })
	ctx := WithClientAddr(context.Background(), netip.MustParseAddr("192.0.2.7"))
	if err := a.Admin().CreateHost(ctx, "host-1", "aa:bb:cc:dd:ee:01", "right password"); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := a.LoginHost(ctx, "host-1", "aa:bb:cc:dd:ee:02", "right password"); !errors.Is(err, ErrForbidden) {
			t.Fatalf("refused MAC, attempt %d: %v, want ErrForbidden", i+1, err)
		}
	}
	h, err := store.GetHost(ctx, "host-1")
	if err != nil {
		t.Fatal(err)
	}
	if h.State.v.PasswordFailures != 0 {
		t.Errorf("after ten refused MAC addresses the host has %d failures, want 0", h.State.v.PasswordFailures)
	}
	if _, err := a.LoginHost(ctx, "host-1", "aa:bb:cc:dd:ee:01", "right password"); err != nil {
		t.Errorf("login from the registered MAC after the refusals: %v", err)
	}
}

// TestHostUUIDsInOneCase: two spellings of one UUID are one host.
func TestHostUUIDsInOneCase(t *testing.T) {
	a := quickAuth(t, NewMemoryStore(), &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)})
	ctx := context.Background()
	const id = "0F8FAD5B-D9CB-469F-A165-70867728950E"
	if err := a.Admin().CreateHost(ctx, id, "", "right password"); err != nil {
		t.Fatal(err)
	}
	if err := a.Admin().CreateHost(ctx, strings.ToLower(id), "", "right password"); !errors.Is(err, ErrExists) {
		t.Errorf("second host in lower case: %v, want ErrExists", err)
	}
	out, err := a.LoginHost(ctx, strings.ToLower(id), "", "right password")
	if err != nil || out.ID != strings.ToLower(id) {
		t.Errorf("login in lower case = %+v, %v", out, err)
	}
	// Ids that are not UUIDs keep their case.
	if got, _ := PrepareHostID("Host-A"); got != "Host-A" {
		t.Errorf("PrepareHostID(Host-A) = %q", got)
	}
}

// TestMemoryStoreListHostsCopies: a host a listing returns is the
// caller's, as GetHost's is: changing its client list changes nothing
// stored.
func TestMemoryStoreListHostsCopies(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryStore()
	h := Host{ID: "host-a"}
	h.State.v.PasswordClients = []state.Client{{Client: "192.0.2.1", Known: true}}
	if err := s.CreateHost(ctx, h); err != nil {
		t.Fatal(err)
	}
	listed, err := s.ListHosts(ctx, "", 10)
	if err != nil || len(listed) != 1 {
		t.Fatalf("ListHosts = %v, %v", listed, err)
	}
	listed[0].State.v.PasswordClients[0].Client = "198.51.100.9"
	got, err := s.GetHost(ctx, "host-a")
	if err != nil || got.State.v.PasswordClients[0].Client != "192.0.2.1" {
		t.Errorf("after the listing's copy was changed, the stored host's clients are %v (%v)", got.State.v.PasswordClients, err)
	}
}
