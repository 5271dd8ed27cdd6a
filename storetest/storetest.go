// Package storetest is a conformance suite for implementations of
// [nmauth.Store]. A Store that passes Run keeps the contract written on the
// interface: missing records, duplicate keys, atomic updates under
// contention, copies that callers cannot alias, and context cancellation.
//
// Use it from a test of the implementation:
//
//	func TestMyStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) nmauth.Store {
//			return newMyStore(t) // empty, cleaned up with t.Cleanup
//		})
//	}
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/internal/state"
)

// contenders is how many goroutines race in the concurrency tests.
const contenders = 50

// Run runs the conformance suite, one subtest per property, each against a
// fresh empty store from newStore.
func Run(t *testing.T, newStore func(t *testing.T) nmauth.Store) {
	t.Helper()
	tests := []struct {
		name string
		run  func(*testing.T, nmauth.Store)
	}{
		{"GetMissing", testGetMissing},
		{"UserRoundTrip", testUserRoundTrip},
		{"HostRoundTrip", testHostRoundTrip},
		{"CreateDuplicate", testCreateDuplicate},
		{"UpdateMissing", testUpdateMissing},
		{"UserUpdatePersists", testUserUpdatePersists},
		{"HostUpdatePersists", testHostUpdatePersists},
		{"UpdateKeepsKey", testUpdateKeepsKey},
		{"UpdateAborts", testUpdateAborts},
		{"ReturnsCopies", testReturnsCopies},
		{"ListUsersSorted", testListUsersSorted},
		{"PageUsers", testPageUsers},
		{"PageHosts", testPageHosts},
		{"Delete", testDelete},
		{"ConcurrentStepCAS", testConcurrentStepCAS},
		{"ConcurrentCounters", testConcurrentCounters},
		{"ConcurrentCreate", testConcurrentCreate},
		{"CancelledUser", testCancelledUser},
		{"CancelledHost", testCancelledHost},
		{"AccessTokens", testAccessTokens},
		{"ConcurrentAccessTokens", testConcurrentAccessTokens},
		{"DeadAccessTokens", testDeadAccessTokens},
		{"EnrollmentKeys", testEnrollmentKeys},
		{"ConcurrentJoins", testConcurrentJoins},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore(t)) })
	}
}

// errStepUsed stands for the TOTP replay check in the compare-and-set test.
var errStepUsed = errors.New("storetest: step already used")

// fullUser returns a user with every field set to a value that differs
// from its zero value, including times with nanoseconds in a non-UTC zone
// and a secret holding zero bytes.
func fullUser(name string) nmauth.User {
	zone := time.FixedZone("UTC+05:30", 5*3600+30*60)
	u := nmauth.User{
		Name:          name,
		PasswordHash:  "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaA",
		Disabled:      true,
		TOTPSecret:    []byte{0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff, 0x00, 0x2a},
		RecoveryCodes: []string{"$argon2id$code-one", "$argon2id$code-two", "é ü ✓"},
		CreatedAt:     time.Date(2261, 6, 1, 0, 0, 0, 7, time.UTC),
	}
	state.Put(&u.State, state.User{
		Account: state.Account{
			PasswordFailures:     4,
			PasswordBlockedUntil: time.Date(2030, 12, 31, 23, 59, 59, 999999999, time.UTC),
			PasswordClients: []state.Client{
				{Client: "192.0.2.7", Failures: 3, BlockedUntil: time.Date(2030, 1, 2, 3, 4, 5, 6, zone)},
				{Client: "2001:db8::/64", Known: true},
			},
			Generation: 1<<64 - 3, // above the int64 range, so a store must keep all 64 bits
		},
		TOTPLastStep:     59_473_123,
		TOTPFailures:     3,
		TOTPBlockedUntil: time.Date(2031, 1, 2, 3, 4, 5, 123456789, zone),
		PreAuthID:        "0f5c2a9e-preauth",
		PreAuthFailures:  2,
		LoggedOut: []state.LoggedOut{
			{ID: "jti-one", Until: time.Date(2030, 3, 4, 5, 6, 7, 8, zone)},
			{ID: "jti-two", Until: time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)},
		},
	})
	return u
}

// bareUser returns a user with only a name and a password hash: every
// time is zero, TOTPSecret and RecoveryCodes are nil.
func bareUser(name string) nmauth.User {
	return nmauth.User{Name: name, PasswordHash: "$argon2id$v=19$m=19456,t=2,p=1$YmFyZXNhbHQ$YmFyZWhhc2g"}
}

// fullHost returns a host with every field set to a non-zero value.
func fullHost(id string) nmauth.Host {
	h := nmauth.Host{
		ID:           id,
		MACAddress:   "02:00:5e:10:00:01",
		PasswordHash: "$argon2id$v=19$m=19456,t=2,p=1$aG9zdHNhbHQ$aG9zdGhhc2g",
		Disabled:     true,
		CreatedAt:    time.Date(2024, 4, 5, 6, 7, 8, 9, time.UTC),
	}
	state.Put(&h.State, state.User{Account: state.Account{
		PasswordFailures:     6,
		PasswordBlockedUntil: time.Date(2029, 2, 3, 4, 5, 6, 700800900, time.FixedZone("UTC-8", -8*3600)),
		PasswordClients:      []state.Client{{Client: "", Failures: 1}},
		Generation:           42,
	}})
	return h
}

// bareHost returns a host with only an id and a password hash.
func bareHost(id string) nmauth.Host {
	return nmauth.Host{ID: id, PasswordHash: "$argon2id$v=19$m=19456,t=2,p=1$YmFyZWhvc3Q$YmFyZWhvc3RoYXNo"}
}

func testGetMissing(t *testing.T, s nmauth.Store) {
	ctx := context.Background()
	mustCreateUser(t, s, bareUser("alice"))
	mustCreateHost(t, s, bareHost("host-a"))
	if _, err := s.GetUser(ctx, "bob"); !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("GetUser(missing) error = %v, want ErrNotFound", err)
	}
	if _, err := s.GetHost(ctx, "host-b"); !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("GetHost(missing) error = %v, want ErrNotFound", err)
	}
	// Keys are exact: no case folding or trimming behind the caller's back.
	if _, err := s.GetUser(ctx, "Alice"); !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("GetUser(%q) error = %v, want ErrNotFound", "Alice", err)
	}
}

func testUserRoundTrip(t *testing.T, s nmauth.Store) {
	tests := []struct {
		name string
		user nmauth.User
	}{
		{"bare", bareUser("bare")},
		{"full", fullUser("full")},
		{"unicode name", fullUser("zoë.ünïcode")},
		{"extremes", func() nmauth.User {
			u := fullUser("extremes")
			state.Edit(&u.State, func(s *state.User) { s.TOTPLastStep = 1<<62 + 3 })
			state.Edit(&u.State, func(s *state.User) { s.TOTPFailures = 1 << 40 })
			state.Edit(&u.State, func(s *state.User) { s.TOTPBlockedUntil = time.Date(1678, 1, 1, 0, 0, 0, 1, time.UTC) })
			u.CreatedAt = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)
			u.TOTPSecret = bytes.Repeat([]byte{0xa5, 0x00}, 512)
			return u
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mustCreateUser(t, s, tc.user)
			checkUser(t, mustGetUser(t, s, tc.user.Name), tc.user)
		})
	}
}

func testHostRoundTrip(t *testing.T, s nmauth.Store) {
	for _, h := range []nmauth.Host{bareHost("bare"), fullHost("full")} {
		t.Run(h.ID, func(t *testing.T) {
			mustCreateHost(t, s, h)
			checkHost(t, mustGetHost(t, s, h.ID), h)
		})
	}
}

func testCreateDuplicate(t *testing.T, s nmauth.Store) {
	ctx := context.Background()
	first := fullUser("alice")
	mustCreateUser(t, s, first)
	if err := s.CreateUser(ctx, bareUser("alice")); !errors.Is(err, nmauth.ErrExists) {
		t.Errorf("CreateUser(duplicate) error = %v, want ErrExists", err)
	}
	checkUser(t, mustGetUser(t, s, "alice"), first)

	firstHost := fullHost("host-a")
	mustCreateHost(t, s, firstHost)
	if err := s.CreateHost(ctx, bareHost("host-a")); !errors.Is(err, nmauth.ErrExists) {
		t.Errorf("CreateHost(duplicate) error = %v, want ErrExists", err)
	}
	checkHost(t, mustGetHost(t, s, "host-a"), firstHost)
}

func testUpdateMissing(t *testing.T, s nmauth.Store) {
	ctx := context.Background()
	called := false
	err := s.UpdateUser(ctx, "ghost", func(*nmauth.User) error { called = true; return nil })
	if !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("UpdateUser(missing) error = %v, want ErrNotFound", err)
	}
	err = s.UpdateHost(ctx, "ghost", func(*nmauth.Host) error { called = true; return nil })
	if !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("UpdateHost(missing) error = %v, want ErrNotFound", err)
	}
	if called {
		t.Error("update called fn for a missing record")
	}
	if _, err := s.GetUser(ctx, "ghost"); !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("UpdateUser(missing) created a record: GetUser error = %v", err)
	}
	if _, err := s.GetHost(ctx, "ghost"); !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("UpdateHost(missing) created a record: GetHost error = %v", err)
	}
}

func testUserUpdatePersists(t *testing.T, s nmauth.Store) {
	cleared := bareUser("alice")
	cleared.PasswordHash = fullUser("alice").PasswordHash
	steps := []struct {
		name string
		want nmauth.User
	}{
		{"set every field", fullUser("alice")},
		{"clear secret, codes and times", cleared},
		{"set again", fullUser("alice")},
	}
	mustCreateUser(t, s, bareUser("alice"))
	prev := bareUser("alice")
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			err := s.UpdateUser(context.Background(), "alice", func(u *nmauth.User) error {
				if d := userDiff(*u, prev); len(d) > 0 {
					t.Errorf("fn got a stale record: %s", strings.Join(d, "; "))
				}
				*u = cloneUser(step.want)
				return nil
			})
			if err != nil {
				t.Fatalf("UpdateUser: %v", err)
			}
			checkUser(t, mustGetUser(t, s, "alice"), step.want)
		})
		prev = step.want
	}
}

func testHostUpdatePersists(t *testing.T, s nmauth.Store) {
	steps := []struct {
		name string
		want nmauth.Host
	}{
		{"set every field", fullHost("host-a")},
		{"clear", bareHost("host-a")},
	}
	mustCreateHost(t, s, bareHost("host-a"))
	prev := bareHost("host-a")
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			err := s.UpdateHost(context.Background(), "host-a", func(h *nmauth.Host) error {
				if d := hostDiff(*h, prev); len(d) > 0 {
					t.Errorf("fn got a stale record: %s", strings.Join(d, "; "))
				}
				*h = step.want
				return nil
			})
			if err != nil {
				t.Fatalf("UpdateHost: %v", err)
			}
			checkHost(t, mustGetHost(t, s, "host-a"), step.want)
		})
		prev = step.want
	}
}

// testUpdateKeepsKey checks that fn cannot move a record to another key:
// the key is the identity every token and counter refers to.
func testUpdateKeepsKey(t *testing.T, s nmauth.Store) {
	ctx := context.Background()
	mustCreateUser(t, s, bareUser("alice"))
	err := s.UpdateUser(ctx, "alice", func(u *nmauth.User) error {
		u.Name = "mallory"
		state.Edit(&u.State, func(s *state.User) { s.TOTPFailures = 1 })
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateUser: %v", err)
	}
	if got := mustGetUser(t, s, "alice"); state.Of(got.State).TOTPFailures != 1 {
		t.Errorf("alice.TOTPFailures = %d, want 1", state.Of(got.State).TOTPFailures)
	}
	if _, err := s.GetUser(ctx, "mallory"); !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("GetUser(renamed) error = %v, want ErrNotFound", err)
	}

	mustCreateHost(t, s, bareHost("host-a"))
	err = s.UpdateHost(ctx, "host-a", func(h *nmauth.Host) error {
		h.ID = "host-z"
		state.Edit(&h.State, func(s *state.User) { s.PasswordFailures = 1 })
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateHost: %v", err)
	}
	if got := mustGetHost(t, s, "host-a"); state.Of(got.State).PasswordFailures != 1 {
		t.Errorf("host-a.PasswordFailures = %d, want 1", state.Of(got.State).PasswordFailures)
	}
	if _, err := s.GetHost(ctx, "host-z"); !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("GetHost(renamed) error = %v, want ErrNotFound", err)
	}
}

func testUpdateAborts(t *testing.T, s nmauth.Store) {
	ctx := context.Background()
	mustCreateUser(t, s, fullUser("alice"))
	mustCreateHost(t, s, fullHost("host-a"))
	errs := []struct {
		name string
		err  error
	}{
		{"plain", errors.New("storetest: abort")},
		{"wrapped sentinel", fmt.Errorf("storetest: %w", nmauth.ErrInvalidCode)},
		{"typed", &nmauth.RetryError{Reason: nmauth.ErrThrottled, RetryAfter: time.Minute}},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			err := s.UpdateUser(ctx, "alice", func(u *nmauth.User) error {
				*u = bareUser("alice")
				state.Edit(&u.State, func(s *state.User) { s.TOTPLastStep = 1 })
				return tc.err
			})
			if err != tc.err || !errors.Is(err, tc.err) {
				t.Errorf("UpdateUser error = %#v, want fn's error %#v unchanged", err, tc.err)
			}
			checkUser(t, mustGetUser(t, s, "alice"), fullUser("alice"))

			err = s.UpdateHost(ctx, "host-a", func(h *nmauth.Host) error {
				*h = bareHost("host-a")
				return tc.err
			})
			if err != tc.err {
				t.Errorf("UpdateHost error = %#v, want fn's error %#v unchanged", err, tc.err)
			}
			checkHost(t, mustGetHost(t, s, "host-a"), fullHost("host-a"))
		})
	}
}

func testReturnsCopies(t *testing.T, s nmauth.Store) {
	ctx := context.Background()
	in := fullUser("alice")
	mustCreateUser(t, s, in)
	scribble(&in) // the caller's value after CreateUser

	got := mustGetUser(t, s, "alice")
	scribble(&got)

	list, err := s.ListUsers(ctx, "", 10)
	if err != nil {
		t.Fatalf("ListUsers: %v", err)
	}
	for i := range list {
		scribble(&list[i])
	}
	checkUser(t, mustGetUser(t, s, "alice"), fullUser("alice"))
}

// scribble overwrites a user in place, including the arrays behind its
// slices, as a careless caller might.
func scribble(u *nmauth.User) {
	for i := range u.TOTPSecret {
		u.TOTPSecret[i] ^= 0xff
	}
	for i := range u.RecoveryCodes {
		u.RecoveryCodes[i] = "scribbled"
	}
	state.Edit(&u.State, func(s *state.User) { s.TOTPLastStep = -1 })
	u.CreatedAt = time.Time{}
}

func testListUsersSorted(t *testing.T, s nmauth.Store) {
	ctx := context.Background()
	users, err := s.ListUsers(ctx, "", 100)
	if err != nil {
		t.Fatalf("ListUsers(empty): %v", err)
	}
	if len(users) != 0 {
		t.Fatalf("ListUsers(empty) = %d users, want 0", len(users))
	}
	// Byte order differs from most collations here: "zoey" < "zoë".
	names := []string{"zoë", "carol", "alice", "zoey", "bob", "zoe", "ålice", "al"}
	for _, name := range names {
		if name == "carol" {
			mustCreateUser(t, s, fullUser(name))
			continue
		}
		mustCreateUser(t, s, bareUser(name))
	}
	users, err = s.ListUsers(ctx, "", 100)
	if err != nil {
		t.Fatalf("ListUsers: %v", err)
	}
	got := make([]string, len(users))
	for i, u := range users {
		got[i] = u.Name
		want := bareUser(u.Name)
		if u.Name == "carol" {
			want = fullUser(u.Name)
		}
		checkUser(t, u, want)
	}
	if want := slices.Sorted(slices.Values(names)); !slices.Equal(got, want) {
		t.Errorf("ListUsers names = %q, want %q", got, want)
	}
}

func testPageUsers(t *testing.T, s nmauth.Store) {
	testPaging(t, s.ListUsers, func(name string) { mustCreateUser(t, s, bareUser(name)) },
		func(u nmauth.User) string { return u.Name })
}

func testPageHosts(t *testing.T, s nmauth.Store) {
	testPaging(t, s.ListHosts, func(id string) { mustCreateHost(t, s, bareHost(id)) },
		func(h nmauth.Host) string { return h.ID })
}

// testPaging checks one paged listing: list pages through the records that
// create makes, and key names a record.
func testPaging[T any](t *testing.T, list func(context.Context, string, int) ([]T, error), create func(string), key func(T) string) {
	ctx := context.Background()
	page := func(after string, limit int) []string {
		t.Helper()
		recs, err := list(ctx, after, limit)
		if err != nil {
			t.Fatalf("list(after %q, limit %d): %v", after, limit, err)
		}
		keys := make([]string, len(recs))
		for i, r := range recs {
			keys[i] = key(r)
		}
		return keys
	}
	if got := page("", 10); len(got) != 0 {
		t.Fatalf("empty store: list = %q, want none", got)
	}
	// Byte order differs from most collations here: "k-Z" < "k-a" and
	// "k-zoey" < "k-zoë".
	keys := []string{"k-b", "k-zoë", "k-a", "k-Z", "k-10", "k-zoey", "k-9", "k-ålice", "k-c", "k-1", "k-zoe", "k-al"}
	for _, k := range keys {
		create(k)
	}
	want := slices.Sorted(slices.Values(keys))

	for _, limit := range []int{1, 3, 4, 5, 12, 13, 1 << 30} {
		var got []string
		after, pages := "", 0
		for {
			p := page(after, limit)
			if len(p) > limit {
				t.Fatalf("limit %d: page of %d", limit, len(p))
			}
			got = append(got, p...)
			if pages++; len(p) < limit || pages > len(keys)+1 {
				break
			}
			after = p[len(p)-1]
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: pages gave %q, want %q", limit, got, want)
		}
		// An exact multiple ends with an empty page.
		if wantPages := len(keys)/limit + 1; limit <= len(keys) && pages != wantPages {
			t.Errorf("limit %d: %d pages, want %d", limit, pages, wantPages)
		}
	}

	cases := []struct {
		after string
		limit int
		want  []string
	}{
		{"k-10", 3, []string{"k-9", "k-Z", "k-a"}},  // after a stored key
		{"k-2", 2, []string{"k-9", "k-Z"}},          // after a key not stored
		{"k-zoey", 5, []string{"k-zoë", "k-ålice"}}, // near the end
		{"k-ålice", 5, nil},                         // after the last
		{"zzz", 5, nil},                             // after everything
		{"", 2, []string{"k-1", "k-10"}},            // from the start
		{"", 0, nil},                                // no room
		{"", -1, nil},                               // less than none
		{"k-a\x01", 1, []string{"k-al"}},            // a byte above a stored key
	}
	for _, c := range cases {
		if got := page(c.after, c.limit); !slices.Equal(got, c.want) {
			t.Errorf("list(after %q, limit %d) = %q, want %q", c.after, c.limit, got, c.want)
		}
	}
}

func testDelete(t *testing.T, s nmauth.Store) {
	ctx := context.Background()
	mustCreateUser(t, s, fullUser("alice"))
	mustCreateUser(t, s, fullUser("bob"))
	mustCreateHost(t, s, fullHost("host-a"))
	mustCreateHost(t, s, fullHost("host-b"))

	if err := s.DeleteUser(ctx, "alice"); err != nil {
		t.Fatalf("DeleteUser: %v", err)
	}
	if err := s.DeleteHost(ctx, "host-a"); err != nil {
		t.Fatalf("DeleteHost: %v", err)
	}
	if _, err := s.GetUser(ctx, "alice"); !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("GetUser(deleted) error = %v, want ErrNotFound", err)
	}
	if _, err := s.GetHost(ctx, "host-a"); !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("GetHost(deleted) error = %v, want ErrNotFound", err)
	}
	checkUser(t, mustGetUser(t, s, "bob"), fullUser("bob"))
	checkHost(t, mustGetHost(t, s, "host-b"), fullHost("host-b"))
	if list, err := s.ListUsers(ctx, "", 10); err != nil || len(list) != 1 {
		t.Errorf("ListUsers after delete = %d users, %v; want 1, nil", len(list), err)
	}
	if list, err := s.ListHosts(ctx, "", 10); err != nil || len(list) != 1 {
		t.Errorf("ListHosts after delete = %d hosts, %v; want 1, nil", len(list), err)
	}

	if err := s.DeleteUser(ctx, "alice"); err != nil {
		t.Errorf("DeleteUser(missing) = %v, want nil", err)
	}
	if err := s.DeleteHost(ctx, "host-a"); err != nil {
		t.Errorf("DeleteHost(missing) = %v, want nil", err)
	}

	// A deleted key is free again, with none of the old record left.
	mustCreateUser(t, s, bareUser("alice"))
	checkUser(t, mustGetUser(t, s, "alice"), bareUser("alice"))
	mustCreateHost(t, s, bareHost("host-a"))
	checkHost(t, mustGetHost(t, s, "host-a"), bareHost("host-a"))
}

// testConcurrentStepCAS races contenders updates that each accept TOTP
// step 7 only if no later or equal step was accepted: exactly one wins, as
// one code must never log in twice.
func testConcurrentStepCAS(t *testing.T, s nmauth.Store) {
	ctx := context.Background()
	mustCreateUser(t, s, bareUser("alice"))
	errs := race(contenders, func(int) error {
		return s.UpdateUser(ctx, "alice", func(u *nmauth.User) error {
			if state.Of(u.State).TOTPLastStep >= 7 {
				return errStepUsed
			}
			runtime.Gosched() // widen the window a non-atomic store would lose in
			state.Edit(&u.State, func(s *state.User) { s.TOTPLastStep = 7 })
			return nil
		})
	})
	checkOneWinner(t, errs, errStepUsed)
	if got := state.Of(mustGetUser(t, s, "alice").State).TOTPLastStep; got != 7 {
		t.Errorf("TOTPLastStep = %d, want 7", got)
	}
}

// testConcurrentCounters races contenders increments of a user's and a
// host's failure counters: none may be lost.
func testConcurrentCounters(t *testing.T, s nmauth.Store) {
	ctx := context.Background()
	mustCreateUser(t, s, bareUser("alice"))
	mustCreateHost(t, s, bareHost("host-a"))
	errs := race(2*contenders, func(i int) error {
		if i%2 == 0 {
			return s.UpdateUser(ctx, "alice", func(u *nmauth.User) error {
				n := state.Of(u.State).TOTPFailures
				runtime.Gosched()
				state.Edit(&u.State, func(s *state.User) { s.TOTPFailures = n + 1 })
				return nil
			})
		}
		return s.UpdateHost(ctx, "host-a", func(h *nmauth.Host) error {
			n := state.Of(h.State).PasswordFailures
			runtime.Gosched()
			state.Edit(&h.State, func(s *state.User) { s.PasswordFailures = n + 1 })
			return nil
		})
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("update %d: %v", i, err)
		}
	}
	if got := state.Of(mustGetUser(t, s, "alice").State).TOTPFailures; got != contenders {
		t.Errorf("TOTPFailures = %d, want %d", got, contenders)
	}
	if got := state.Of(mustGetHost(t, s, "host-a").State).PasswordFailures; got != contenders {
		t.Errorf("PasswordFailures = %d, want %d", got, contenders)
	}
}

// testConcurrentCreate races contenders creates of one user and of one
// host: exactly one of each succeeds, the others get ErrExists, and the
// stored record is the winner's.
func testConcurrentCreate(t *testing.T, s nmauth.Store) {
	ctx := context.Background()
	hash := func(i int) string { return fmt.Sprintf("hash-%d", i) }
	userErrs := race(contenders, func(i int) error {
		u := bareUser("alice")
		u.PasswordHash = hash(i)
		return s.CreateUser(ctx, u)
	})
	hostErrs := race(contenders, func(i int) error {
		h := bareHost("host-a")
		h.PasswordHash = hash(i)
		return s.CreateHost(ctx, h)
	})
	checks := []struct {
		name   string
		errs   []error
		stored string
	}{
		{"user", userErrs, mustGetUser(t, s, "alice").PasswordHash},
		{"host", hostErrs, mustGetHost(t, s, "host-a").PasswordHash},
	}
	for _, c := range checks {
		winner := -1
		for i, err := range c.errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("%s creates %d and %d both succeeded", c.name, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, nmauth.ErrExists):
				t.Errorf("%s create %d: %v, want nil or ErrExists", c.name, i, err)
			}
		}
		if winner < 0 {
			t.Errorf("no %s create succeeded", c.name)
		} else if c.stored != hash(winner) {
			t.Errorf("stored %s has PasswordHash %q, want the winner's %q", c.name, c.stored, hash(winner))
		}
	}
}

func testCancelledUser(t *testing.T, s nmauth.Store) {
	mustCreateUser(t, s, fullUser("alice"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ops := []struct {
		name string
		call func() error
	}{
		{"GetUser", func() error { _, err := s.GetUser(ctx, "alice"); return err }},
		{"ListUsers", func() error { _, err := s.ListUsers(ctx, "", 10); return err }},
		{"CreateUser", func() error { return s.CreateUser(ctx, bareUser("bob")) }},
		{"UpdateUser", func() error {
			return s.UpdateUser(ctx, "alice", func(u *nmauth.User) error {
				*u = bareUser("alice")
				return nil
			})
		}},
		{"DeleteUser", func() error { return s.DeleteUser(ctx, "alice") }},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			if err := op.call(); !errors.Is(err, context.Canceled) {
				t.Errorf("%s(cancelled) error = %v, want context.Canceled", op.name, err)
			}
		})
	}
	checkUser(t, mustGetUser(t, s, "alice"), fullUser("alice"))
	if _, err := s.GetUser(context.Background(), "bob"); !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("CreateUser(cancelled) stored a user: GetUser error = %v", err)
	}
}

func testCancelledHost(t *testing.T, s nmauth.Store) {
	mustCreateHost(t, s, fullHost("host-a"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ops := []struct {
		name string
		call func() error
	}{
		{"GetHost", func() error { _, err := s.GetHost(ctx, "host-a"); return err }},
		{"ListHosts", func() error { _, err := s.ListHosts(ctx, "", 10); return err }},
		{"CreateHost", func() error { return s.CreateHost(ctx, bareHost("host-b")) }},
		{"UpdateHost", func() error {
			return s.UpdateHost(ctx, "host-a", func(h *nmauth.Host) error {
				*h = bareHost("host-a")
				return nil
			})
		}},
		{"DeleteHost", func() error { return s.DeleteHost(ctx, "host-a") }},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			if err := op.call(); !errors.Is(err, context.Canceled) {
				t.Errorf("%s(cancelled) error = %v, want context.Canceled", op.name, err)
			}
		})
	}
	checkHost(t, mustGetHost(t, s, "host-a"), fullHost("host-a"))
	if _, err := s.GetHost(context.Background(), "host-b"); !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("CreateHost(cancelled) stored a host: GetHost error = %v", err)
	}
}

// race runs n calls of fn at once, released together, and returns their
// errors by index.
func race(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = fn(i)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

// checkOneWinner fails t unless exactly one of errs is nil and every other
// is lost, the error a losing compare-and-set returns.
func checkOneWinner(t *testing.T, errs []error, lost error) {
	t.Helper()
	winners := 0
	for i, err := range errs {
		switch {
		case err == nil:
			winners++
		case err != lost:
			t.Errorf("update %d: %v, want nil or %v", i, err, lost)
		}
	}
	if winners != 1 {
		t.Errorf("%d of %d updates won the compare-and-set, want exactly 1", winners, len(errs))
	}
}

func mustCreateUser(t *testing.T, s nmauth.Store, u nmauth.User) {
	t.Helper()
	if err := s.CreateUser(context.Background(), u); err != nil {
		t.Fatalf("CreateUser(%q): %v", u.Name, err)
	}
}

func mustCreateHost(t *testing.T, s nmauth.Store, h nmauth.Host) {
	t.Helper()
	if err := s.CreateHost(context.Background(), h); err != nil {
		t.Fatalf("CreateHost(%q): %v", h.ID, err)
	}
}

func mustGetUser(t *testing.T, s nmauth.Store, name string) nmauth.User {
	t.Helper()
	u, err := s.GetUser(context.Background(), name)
	if err != nil {
		t.Fatalf("GetUser(%q): %v", name, err)
	}
	return u
}

func mustGetHost(t *testing.T, s nmauth.Store, id string) nmauth.Host {
	t.Helper()
	h, err := s.GetHost(context.Background(), id)
	if err != nil {
		t.Fatalf("GetHost(%q): %v", id, err)
	}
	return h
}

func checkUser(t *testing.T, got, want nmauth.User) {
	t.Helper()
	if d := userDiff(got, want); len(d) > 0 {
		t.Errorf("user %q differs: %s", want.Name, strings.Join(d, "; "))
	}
}

func checkHost(t *testing.T, got, want nmauth.Host) {
	t.Helper()
	if d := hostDiff(got, want); len(d) > 0 {
		t.Errorf("host %q differs: %s", want.ID, strings.Join(d, "; "))
	}
}

// userDiff lists the fields in which got differs from want. Times compare
// as instants (a store may return another zone) and must keep zero-ness;
// TOTPSecret must keep nil-ness, because nil means TOTP is off.
func userDiff(got, want nmauth.User) []string {
	var d []string
	gs, ws := state.Of(got.State), state.Of(want.State)
	d = diff(d, "Name", got.Name, want.Name)
	d = diff(d, "PasswordHash", got.PasswordHash, want.PasswordHash)
	d = diff(d, "Disabled", got.Disabled, want.Disabled)
	if (got.TOTPSecret == nil) != (want.TOTPSecret == nil) || !bytes.Equal(got.TOTPSecret, want.TOTPSecret) {
		d = append(d, fmt.Sprintf("TOTPSecret = %x (nil %t), want %x (nil %t)",
			got.TOTPSecret, got.TOTPSecret == nil, want.TOTPSecret, want.TOTPSecret == nil))
	}
	d = diff(d, "TOTPLastStep", gs.TOTPLastStep, ws.TOTPLastStep)
	d = diff(d, "TOTPFailures", gs.TOTPFailures, ws.TOTPFailures)
	d = diffTime(d, "TOTPBlockedUntil", gs.TOTPBlockedUntil, ws.TOTPBlockedUntil)
	d = diff(d, "PreAuthID", gs.PreAuthID, ws.PreAuthID)
	d = diff(d, "PreAuthFailures", gs.PreAuthFailures, ws.PreAuthFailures)
	if !slices.Equal(got.RecoveryCodes, want.RecoveryCodes) {
		d = append(d, fmt.Sprintf("RecoveryCodes = %q, want %q", got.RecoveryCodes, want.RecoveryCodes))
	}
	d = diff(d, "PasswordFailures", gs.PasswordFailures, ws.PasswordFailures)
	d = diffTime(d, "PasswordBlockedUntil", gs.PasswordBlockedUntil, ws.PasswordBlockedUntil)
	d = diffClients(d, gs.PasswordClients, ws.PasswordClients)
	d = diff(d, "Generation", gs.Generation, ws.Generation)
	d = diffTime(d, "CreatedAt", got.CreatedAt, want.CreatedAt)
	if !slices.EqualFunc(gs.LoggedOut, ws.LoggedOut, func(g, w state.LoggedOut) bool {
		return g.ID == w.ID && g.Until.Equal(w.Until)
	}) {
		d = append(d, fmt.Sprintf("LoggedOut = %+v, want %+v", gs.LoggedOut, ws.LoggedOut))
	}
	return d
}

// diffClients compares the per-client failures, times as instants.
func diffClients(d []string, got, want []state.Client) []string {
	same := len(got) == len(want)
	for i := 0; same && i < len(got); i++ {
		g, w := got[i], want[i]
		same = g.Client == w.Client && g.Failures == w.Failures && g.Known == w.Known &&
			g.BlockedUntil.Equal(w.BlockedUntil)
	}
	if !same {
		d = append(d, fmt.Sprintf("PasswordClients = %+v, want %+v", got, want))
	}
	return d
}

func hostDiff(got, want nmauth.Host) []string {
	var d []string
	gs, ws := state.Of(got.State), state.Of(want.State)
	d = diff(d, "ID", got.ID, want.ID)
	d = diff(d, "MACAddress", got.MACAddress, want.MACAddress)
	d = diff(d, "PasswordHash", got.PasswordHash, want.PasswordHash)
	d = diff(d, "Disabled", got.Disabled, want.Disabled)
	d = diff(d, "PasswordFailures", gs.PasswordFailures, ws.PasswordFailures)
	d = diffTime(d, "PasswordBlockedUntil", gs.PasswordBlockedUntil, ws.PasswordBlockedUntil)
	d = diffClients(d, gs.PasswordClients, ws.PasswordClients)
	d = diff(d, "Generation", gs.Generation, ws.Generation)
	d = diffTime(d, "CreatedAt", got.CreatedAt, want.CreatedAt)
	return d
}

func diff[T comparable](d []string, field string, got, want T) []string {
	if got != want {
		d = append(d, fmt.Sprintf("%s = %v, want %v", field, got, want))
	}
	return d
}

func diffTime(d []string, field string, got, want time.Time) []string {
	if got.IsZero() != want.IsZero() || !got.Equal(want) {
		d = append(d, fmt.Sprintf("%s = %v, want %v", field, got, want))
	}
	return d
}

func cloneUser(u nmauth.User) nmauth.User {
	u.TOTPSecret = slices.Clone(u.TOTPSecret)
	u.RecoveryCodes = slices.Clone(u.RecoveryCodes)
	state.Put(&u.State, state.Of(u.State)) // a State of its own
	return u
}
