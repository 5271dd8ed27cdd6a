package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

// fullAccessToken returns an access token with every field set.
func fullAccessToken(id, user string, created time.Time) nmauth.AccessToken {
	return nmauth.AccessToken{
		ID: id, UserName: user, Name: "deploy ✓",
		Digest:     "$nmauth-hmac-sha256$k=0123456789abcdef$" + id,
		ReadOnly:   true,
		Networks:   []string{"home", "office"},
		Generation: 1<<64 - 5,
		CreatedBy:  "admin",
		CreatedAt:  created,
		ExpiresAt:  created.Add(90 * 24 * time.Hour),
		LastUsed:   created.Add(time.Minute + 7),
	}
}

// testAccessTokens checks the AccessTokenStore contract, for a store that
// keeps access tokens; a Store without them is not asked to.
func testAccessTokens(t *testing.T, s nmauth.Store) {
	ts, ok := s.(nmauth.AccessTokenStore)
	if !ok {
		t.Skip("the store does not implement nmauth.AccessTokenStore, which is optional")
	}
	ctx := context.Background()
	base := time.Date(2030, 5, 6, 7, 8, 9, 10, time.FixedZone("UTC-3", -3*3600))
	a1 := fullAccessToken("AAAAAAAAAAAAAAA1", "alice", base.Add(time.Second))
	a2 := fullAccessToken("AAAAAAAAAAAAAAA2", "alice", base)
	b1 := nmauth.AccessToken{ID: "BBBBBBBBBBBBBBB1", UserName: "bob", Name: "b", Digest: "d", CreatedAt: base, ExpiresAt: base.Add(time.Hour)}
	for _, tok := range []nmauth.AccessToken{a1, a2, b1} {
		if err := ts.CreateAccessToken(ctx, tok, 2); err != nil {
			t.Fatalf("CreateAccessToken(%s): %v", tok.ID, err)
		}
	}
	if err := ts.CreateAccessToken(ctx, b1, 100); !errors.Is(err, nmauth.ErrExists) {
		t.Fatalf("CreateAccessToken of an existing id = %v, want ErrExists", err)
	}
	if _, err := ts.GetAccessToken(ctx, "missing"); !errors.Is(err, nmauth.ErrNotFound) {
		t.Fatalf("GetAccessToken(missing) = %v, want ErrNotFound", err)
	}
	got, err := ts.GetAccessToken(ctx, a1.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkAccessToken(t, got, a1)
	got.Networks[0] = "scribbled"
	if again, _ := ts.GetAccessToken(ctx, a1.ID); again.Networks[0] != "home" {
		t.Fatal("a returned token shares its Networks with the store")
	}
	list, err := ts.ListAccessTokens(ctx, "alice")
	if err != nil || len(list) != 2 || list[0].ID != a2.ID || list[1].ID != a1.ID {
		t.Fatalf("ListAccessTokens(alice) = %v, %v; want a2 then a1, oldest first", ids(list), err)
	}
	// alice holds 2: a bound of 2 refuses a third, and stores nothing.
	a3 := fullAccessToken("AAAAAAAAAAAAAAA3", "alice", base)
	if err := ts.CreateAccessToken(ctx, a3, 2); !errors.Is(err, nmauth.ErrTooManyAccessTokens) {
		t.Fatalf("a third token under a bound of 2 = %v, want ErrTooManyAccessTokens", err)
	}
	if _, err := ts.GetAccessToken(ctx, a3.ID); !errors.Is(err, nmauth.ErrNotFound) {
		t.Fatalf("the refused token was stored (GetAccessToken = %v)", err)
	}
	// A touch moves the last use only forward.
	if err := ts.TouchAccessToken(ctx, a1.ID, a1.LastUsed.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	later := a1.LastUsed.Add(time.Hour)
	if err := ts.TouchAccessToken(ctx, a1.ID, later); err != nil {
		t.Fatal(err)
	}
	if got, _ := ts.GetAccessToken(ctx, a1.ID); !got.LastUsed.Equal(later) {
		t.Fatalf("LastUsed = %v after touches, want %v", got.LastUsed, later)
	}
	if err := ts.TouchAccessToken(ctx, "missing", later); err != nil {
		t.Fatalf("TouchAccessToken(missing) = %v, want nil", err)
	}
	if err := ts.DeleteAccessToken(ctx, a2.ID); err != nil {
		t.Fatal(err)
	}
	if err := ts.DeleteAccessToken(ctx, a2.ID); err != nil {
		t.Fatalf("DeleteAccessToken of a missing id = %v, want nil", err)
	}
	if err := ts.DeleteUserAccessTokens(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if list, _ := ts.ListAccessTokens(ctx, "alice"); len(list) != 0 {
		t.Fatalf("alice keeps %v after DeleteUserAccessTokens", ids(list))
	}
	if list, _ := ts.ListAccessTokens(ctx, "bob"); len(list) != 1 {
		t.Fatalf("bob's tokens = %v, want his one, untouched by alice's delete", ids(list))
	}
}

// testConcurrentAccessTokens creates tokens for one user from many
// goroutines at once under a bound: exactly the bound's number are made.
func testConcurrentAccessTokens(t *testing.T, s nmauth.Store) {
	ts, ok := s.(nmauth.AccessTokenStore)
	if !ok {
		t.Skip("the store does not implement nmauth.AccessTokenStore, which is optional")
	}
	const bound = 5
	ctx := context.Background()
	base := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	var made, refused atomic.Int32
	errs := make(chan error, contenders)
	var wg sync.WaitGroup
	for i := range contenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := fullAccessToken(fmt.Sprintf("CCCCCCCCCCCC%04d", i), "carol", base)
			switch err := ts.CreateAccessToken(ctx, tok, bound); {
			case err == nil:
				made.Add(1)
			case errors.Is(err, nmauth.ErrTooManyAccessTokens):
				refused.Add(1)
			default:
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("CreateAccessToken: %v", err)
	}
	list, err := ts.ListAccessTokens(ctx, "carol")
	if err != nil {
		t.Fatal(err)
	}
	if made.Load() != bound || refused.Load() != contenders-bound || len(list) != bound {
		t.Fatalf("%d made, %d refused, %d stored; want %d, %d, %d", made.Load(), refused.Load(), len(list), bound, contenders-bound, bound)
	}
}

func ids(ts []nmauth.AccessToken) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

func checkAccessToken(t *testing.T, got, want nmauth.AccessToken) {
	t.Helper()
	var d []string
	d = diff(d, "ID", got.ID, want.ID)
	d = diff(d, "UserName", got.UserName, want.UserName)
	d = diff(d, "Name", got.Name, want.Name)
	d = diff(d, "Digest", got.Digest, want.Digest)
	d = diff(d, "ReadOnly", got.ReadOnly, want.ReadOnly)
	d = diff(d, "Generation", got.Generation, want.Generation)
	d = diff(d, "CreatedBy", got.CreatedBy, want.CreatedBy)
	d = diffTime(d, "CreatedAt", got.CreatedAt, want.CreatedAt)
	d = diffTime(d, "ExpiresAt", got.ExpiresAt, want.ExpiresAt)
	d = diffTime(d, "LastUsed", got.LastUsed, want.LastUsed)
	if !slices.Equal(got.Networks, want.Networks) {
		d = append(d, "Networks differ")
	}
	if len(d) > 0 {
		t.Errorf("access token %s differs: %v", want.ID, d)
	}
}

// testDeadAccessTokens: a token of another generation (revoked since) or
// expired when a new one is made does not count toward the bound, and
// the creation deletes it.
func testDeadAccessTokens(t *testing.T, s nmauth.Store) {
	ts, ok := s.(nmauth.AccessTokenStore)
	if !ok {
		t.Skip("the store does not implement nmauth.AccessTokenStore, which is optional")
	}
	ctx := context.Background()
	base := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	revoked := fullAccessToken("DDDDDDDDDDDDDDD1", "dave", base)
	revoked.Generation = 7
	expired := fullAccessToken("DDDDDDDDDDDDDDD2", "dave", base)
	expired.Generation = 8
	expired.ExpiresAt = base.Add(time.Hour)
	live := fullAccessToken("DDDDDDDDDDDDDDD3", "dave", base)
	live.Generation = 8
	other := fullAccessToken("EEEEEEEEEEEEEEE1", "erin", base)
	other.Generation = 1
	for _, tok := range []nmauth.AccessToken{revoked, expired, live, other} {
		if err := ts.CreateAccessToken(ctx, tok, 10); err != nil {
			t.Fatalf("CreateAccessToken(%s): %v", tok.ID, err)
		}
	}
	// Two hours on, under generation 8: only live counts, so a bound of
	// 2 admits one more.
	next := fullAccessToken("DDDDDDDDDDDDDDD4", "dave", base.Add(2*time.Hour))
	next.Generation = 8
	if err := ts.CreateAccessToken(ctx, next, 2); err != nil {
		t.Fatalf("a second live token under a bound of 2, beside a revoked and an expired one: %v", err)
	}
	list, err := ts.ListAccessTokens(ctx, "dave")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(list); !slices.Equal(got, []string{live.ID, next.ID}) {
		t.Fatalf("dave's tokens = %v, want only the live %s and %s", got, live.ID, next.ID)
	}
	third := fullAccessToken("DDDDDDDDDDDDDDD5", "dave", base.Add(2*time.Hour))
	third.Generation = 8
	if err := ts.CreateAccessToken(ctx, third, 2); !errors.Is(err, nmauth.ErrTooManyAccessTokens) {
		t.Fatalf("a third live token under a bound of 2 = %v, want ErrTooManyAccessTokens", err)
	}
	if list, _ := ts.ListAccessTokens(ctx, "erin"); len(list) != 1 {
		t.Fatalf("erin's tokens = %v, want hers untouched by dave's creation", ids(list))
	}
}
