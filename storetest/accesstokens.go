package storetest

import (
	"context"
	"errors"
	"slices"
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
		if err := ts.CreateAccessToken(ctx, tok); err != nil {
			t.Fatalf("CreateAccessToken(%s): %v", tok.ID, err)
		}
	}
	if err := ts.CreateAccessToken(ctx, b1); !errors.Is(err, nmauth.ErrExists) {
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
