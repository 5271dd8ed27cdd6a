package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

// enrollKey returns an enrollment key of uses uses (0: unlimited) made at
// created.
func enrollKey(id string, uses int, created time.Time) nmauth.EnrollmentKey {
	return nmauth.EnrollmentKey{
		ID: id, Name: "fleet ✓", Tags: []string{"ci", "edge"}, Networks: []string{"home", "office"},
		Uses: uses, Unlimited: uses == 0, CreatedBy: "admin", CreatedAt: created,
		ExpiresAt: created.Add(24 * time.Hour),
		Digest:    "$nmauth-hmac-sha256$k=0123456789abcdef$" + id,
	}
}

// testEnrollmentKeys checks the EnrollmentKeyStore contract, for a store
// that keeps enrollment keys; a Store without them is not asked to.
func testEnrollmentKeys(t *testing.T, s nmauth.Store) {
	ks, ok := s.(nmauth.EnrollmentKeyStore)
	if !ok {
		t.Skip("the store does not implement nmauth.EnrollmentKeyStore, which is optional")
	}
	ctx := context.Background()
	base := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	k1, k2 := enrollKey("KEYAAAAAAAAAAAA1", 2, base.Add(time.Second)), enrollKey("KEYAAAAAAAAAAAA2", 0, base)
	for _, k := range []nmauth.EnrollmentKey{k1, k2} {
		if err := ks.CreateEnrollmentKey(ctx, k); err != nil {
			t.Fatalf("CreateEnrollmentKey(%s): %v", k.ID, err)
		}
	}
	if err := ks.CreateEnrollmentKey(ctx, k1); !errors.Is(err, nmauth.ErrExists) {
		t.Fatalf("CreateEnrollmentKey of an existing id = %v, want ErrExists", err)
	}
	if _, err := ks.GetEnrollmentKey(ctx, "missing"); !errors.Is(err, nmauth.ErrNotFound) {
		t.Fatalf("GetEnrollmentKey(missing) = %v, want ErrNotFound", err)
	}
	if got, err := ks.GetEnrollmentKey(ctx, k1.ID); err != nil || fmt.Sprint(got) != fmt.Sprint(k1) {
		t.Fatalf("GetEnrollmentKey = %+v, %v; want %+v", got, err, k1)
	}
	list, err := ks.ListEnrollmentKeys(ctx)
	if err != nil || len(list) != 2 || list[0].ID != k2.ID || list[1].ID != k1.ID {
		t.Fatalf("ListEnrollmentKeys = %+v, %v; want k2 then k1, oldest first", list, err)
	}

	now := base.Add(time.Hour)
	host := func(id string) nmauth.Host { return bareHost(id) }
	if _, err := ks.JoinHost(ctx, k1.ID, "another digest", host("h-wrong"), now); !errors.Is(err, nmauth.ErrNotFound) {
		t.Fatalf("JoinHost with another digest = %v, want ErrNotFound", err)
	}
	got, err := ks.JoinHost(ctx, k1.ID, k1.Digest, host("h-1"), now)
	if err != nil || got.Used != 1 || !slices.Equal(got.Networks, k1.Networks) {
		t.Fatalf("JoinHost = %+v, %v; want the key with one use spent", got, err)
	}
	mustGetHost(t, s, "h-1")
	if _, err := ks.JoinHost(ctx, k1.ID, k1.Digest, host("h-1"), now); !errors.Is(err, nmauth.ErrExists) {
		t.Fatalf("JoinHost of a taken id = %v, want ErrExists", err)
	}
	if _, err := ks.JoinHost(ctx, k1.ID, k1.Digest, host("h-2"), k1.ExpiresAt); !errors.Is(err, nmauth.ErrNotFound) {
		t.Fatalf("JoinHost at the key's expiry = %v, want ErrNotFound", err)
	}
	if _, err := ks.JoinHost(ctx, k1.ID, k1.Digest, host("h-2"), now); err != nil {
		t.Fatalf("JoinHost of the last use: %v", err)
	}
	if _, err := ks.JoinHost(ctx, k1.ID, k1.Digest, host("h-3"), now); !errors.Is(err, nmauth.ErrNotFound) {
		t.Fatalf("JoinHost past the uses = %v, want ErrNotFound", err)
	}
	for _, id := range []string{"h-wrong", "h-3"} {
		if _, err := s.GetHost(ctx, id); !errors.Is(err, nmauth.ErrNotFound) {
			t.Fatalf("a refused join left host %s (GetHost = %v)", id, err)
		}
	}
	if got, _ := ks.GetEnrollmentKey(ctx, k1.ID); got.Used != 2 {
		t.Fatalf("after two joins and four refusals the key has %d uses spent, want 2", got.Used)
	}

	if err := ks.RevokeEnrollmentKey(ctx, k2.ID, now); err != nil {
		t.Fatal(err)
	}
	if err := ks.RevokeEnrollmentKey(ctx, k2.ID, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, _ := ks.GetEnrollmentKey(ctx, k2.ID); !got.RevokedAt.Equal(now) {
		t.Fatalf("a key revoked twice has RevokedAt %v, want the first %v", got.RevokedAt, now)
	}
	if _, err := ks.JoinHost(ctx, k2.ID, k2.Digest, host("h-4"), now); !errors.Is(err, nmauth.ErrNotFound) {
		t.Fatalf("JoinHost with a revoked key = %v, want ErrNotFound", err)
	}
	if err := ks.RevokeEnrollmentKey(ctx, "missing", now); !errors.Is(err, nmauth.ErrNotFound) {
		t.Fatalf("RevokeEnrollmentKey(missing) = %v, want ErrNotFound", err)
	}
	for range 2 {
		if err := ks.DeleteEnrollmentKey(ctx, k2.ID); err != nil {
			t.Fatalf("DeleteEnrollmentKey: %v", err)
		}
	}
	if list, _ := ks.ListEnrollmentKeys(ctx); len(list) != 1 || list[0].ID != k1.ID {
		t.Fatalf("ListEnrollmentKeys after a delete = %+v", list)
	}
}

// testConcurrentJoins: contenders joins at once with a key of 5 uses
// create exactly 5 hosts.
func testConcurrentJoins(t *testing.T, s nmauth.Store) {
	ks, ok := s.(nmauth.EnrollmentKeyStore)
	if !ok {
		t.Skip("the store does not implement nmauth.EnrollmentKeyStore, which is optional")
	}
	const uses = 5
	ctx := context.Background()
	base := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	k := enrollKey("KEYAAAAAAAAAAAA3", uses, base)
	if err := ks.CreateEnrollmentKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	errs := race(contenders, func(i int) error {
		_, err := ks.JoinHost(ctx, k.ID, k.Digest, bareHost(fmt.Sprintf("join-%02d", i)), base)
		return err
	})
	joined := 0
	for i, err := range errs {
		switch {
		case err == nil:
			joined++
		case !errors.Is(err, nmauth.ErrNotFound):
			t.Errorf("join %d: %v", i, err)
		}
	}
	hosts, err := s.ListHosts(ctx, "", contenders+1)
	if joined != uses || err != nil || len(hosts) != uses {
		t.Fatalf("%d joins succeeded and %d hosts exist (%v), want %d of each", joined, len(hosts), err, uses)
	}
}
