package nmauth_test

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

// countingEnrollStore counts the joins that reach the Store.
type countingEnrollStore struct {
	*nmauth.MemoryStore
	joins atomic.Int64
}

func (s *countingEnrollStore) JoinHost(ctx context.Context, keyID, digest string, h nmauth.Host, now time.Time) (nmauth.EnrollmentKey, error) {
	s.joins.Add(1)
	return s.MemoryStore.JoinHost(ctx, keyID, digest, h, now)
}

// hostSecret draws a host password as netclient does: 32 base32
// characters of random bytes.
func hostSecret(t testing.TB) string {
	t.Helper()
	return base32.StdEncoding.EncodeToString([]byte(rand.Text()))[:32]
}

func newEnrollAuth(t *testing.T) (*nmauth.Authenticator, *countingEnrollStore, *clock, *eventLog) {
	t.Helper()
	s := &countingEnrollStore{MemoryStore: nmauth.NewMemoryStore()}
	c, events := newClock(), &eventLog{}
	a, err := nmauth.New(nmauth.Config{Store: s, Secrets: [][]byte{testSecret(1)}, Now: c.Now, OnEvent: events.add, ClientRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	return a, s, c, events
}

// TestEnrollmentKeyLifecycle: a key's secret is shown once and never
// listed; a host joins with it and logs in with the secret it chose; each
// step emits its event; revoking keeps the key listed, marked, and
// deleting removes it.
func TestEnrollmentKeyLifecycle(t *testing.T) {
	a, _, c, events := newEnrollAuth(t)
	ctx := context.Background()
	ad := a.Admin()
	k, key, err := ad.CreateEnrollmentKey(ctx, nmauth.EnrollmentKey{Name: "fleet", Tags: []string{"ci"}, Uses: 2, Networks: []string{"net-b", "net-a"}, ExpiresAt: c.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key, "nmauth_ek_"+k.ID+"_") || k.Digest != "" {
		t.Fatalf("CreateEnrollmentKey = %+v, %q; want the key without digest and a secret naming its id", k, key)
	}
	secret := hostSecret(t)
	joined, err := a.JoinHost(ctx, key, "host-1", "aa:bb:cc:dd:ee:ff", secret)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(joined.Networks, ","); got != "net-a,net-b" || joined.Used != 1 {
		t.Fatalf("JoinHost = %+v; want networks net-a,net-b and one use spent", joined)
	}
	if _, err := a.LoginHost(ctx, "host-1", "aa:bb:cc:dd:ee:ff", secret); err != nil {
		t.Fatalf("the joined host cannot log in: %v", err)
	}
	if err := ad.RevokeEnrollmentKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	list, err := ad.EnrollmentKeys(ctx)
	if err != nil || len(list) != 1 || list[0].RevokedAt.IsZero() || list[0].Digest != "" {
		t.Fatalf("EnrollmentKeys after revoke = %+v, %v; want the key, marked revoked, without digest", list, err)
	}
	if _, err := a.JoinHost(ctx, key, "host-2", "", hostSecret(t)); !errors.Is(err, nmauth.ErrInvalidEnrollmentKey) {
		t.Fatalf("join with a revoked key = %v, want ErrInvalidEnrollmentKey", err)
	}
	if err := ad.DeleteEnrollmentKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if err := ad.DeleteEnrollmentKey(ctx, k.ID); !errors.Is(err, nmauth.ErrNotFound) {
		t.Fatalf("deleting a deleted key = %v, want ErrNotFound", err)
	}
	if list, _ := ad.EnrollmentKeys(ctx); len(list) != 0 {
		t.Fatalf("EnrollmentKeys after delete = %+v", list)
	}
	for _, e := range []nmauth.EventType{nmauth.EventEnrollmentKeyCreated, nmauth.EventHostJoined, nmauth.EventEnrollmentKeyRevoked, nmauth.EventEnrollmentKeyDeleted} {
		if events.count(e) != 1 {
			t.Errorf("%d %s events, want 1", events.count(e), e)
		}
	}
}

// TestEnrollmentKeyRequests: a key needs a name and either uses or
// unlimited, and an expiry in the future if any.
func TestEnrollmentKeyRequests(t *testing.T) {
	a, _, c, _ := newEnrollAuth(t)
	for _, tc := range []struct {
		name string
		k    nmauth.EnrollmentKey
	}{
		{"no name", nmauth.EnrollmentKey{Uses: 1}},
		{"no limit", nmauth.EnrollmentKey{Name: "k"}},
		{"both limits", nmauth.EnrollmentKey{Name: "k", Uses: 1, Unlimited: true}},
		{"negative uses", nmauth.EnrollmentKey{Name: "k", Uses: -1}},
		{"past expiry", nmauth.EnrollmentKey{Name: "k", Uses: 1, ExpiresAt: c.Now().Add(-time.Second)}},
		{"bad network", nmauth.EnrollmentKey{Name: "k", Uses: 1, Networks: []string{"a b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, key, err := a.Admin().CreateEnrollmentKey(context.Background(), tc.k); err == nil || key != "" {
				t.Fatalf("CreateEnrollmentKey(%+v) = %q, %v; want an error", tc.k, key, err)
			}
		})
	}
	if list, _ := a.Admin().EnrollmentKeys(context.Background()); len(list) != 0 {
		t.Fatalf("refused keys were stored: %+v", list)
	}
}

// TestJoinRefusedWritesNothing: a made-up key, a weak host secret and a
// malformed host are refused before the Store is asked; a taken host id is
// refused by the Store, spends no use, and keeps its secret.
func TestJoinRefusedWritesNothing(t *testing.T) {
	a, s, _, events := newEnrollAuth(t)
	ctx := context.Background()
	k, key, err := a.Admin().CreateEnrollmentKey(ctx, nmauth.EnrollmentKey{Name: "k", Uses: 5})
	if err != nil {
		t.Fatal(err)
	}
	// A key of the right form whose secret is another: its check fails.
	forged := key[:len("nmauth_ek_")+17] + strings.Repeat("A", 26) + key[len("nmauth_ek_")+17+26:]
	for _, tc := range []struct {
		name, key, id, mac, secret string
		want                       func(error) bool
	}{
		{"made-up key", forged, "h", "", hostSecret(t), func(err error) bool { return errors.Is(err, nmauth.ErrInvalidEnrollmentKey) }},
		{"not a key", "nmauth_ek_short", "h", "", hostSecret(t), func(err error) bool { return errors.Is(err, nmauth.ErrInvalidEnrollmentKey) }},
		{"weak secret", key, "h", "", "correcthorsebatterystaple", func(err error) bool { return err != nil && !errors.Is(err, nmauth.ErrInvalidEnrollmentKey) }},
		{"bad MAC", key, "h", "not-a-mac", hostSecret(t), func(err error) bool { return errors.Is(err, nmauth.ErrInvalidHost) }},
		{"bad id", key, "", "", hostSecret(t), func(err error) bool { return errors.Is(err, nmauth.ErrInvalidHost) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := a.JoinHost(ctx, tc.key, tc.id, tc.mac, tc.secret); !tc.want(err) {
				t.Fatalf("JoinHost = %v", err)
			}
		})
	}
	if n := s.joins.Load(); n != 0 {
		t.Fatalf("%d refused joins reached the Store", n)
	}
	first := hostSecret(t)
	if err := a.Admin().CreateHost(ctx, "taken", "", first); err != nil {
		t.Fatal(err)
	}
	if _, err := a.JoinHost(ctx, key, "taken", "", hostSecret(t)); !errors.Is(err, nmauth.ErrExists) {
		t.Fatalf("join of a taken id = %v, want ErrExists", err)
	}
	if _, err := a.LoginHost(ctx, "taken", "", first); err != nil {
		t.Fatalf("the taken host's secret changed: %v", err)
	}
	list, _ := a.Admin().EnrollmentKeys(ctx)
	if len(list) != 1 || list[0].ID != k.ID || list[0].Used != 0 || events.count(nmauth.EventHostJoined) != 0 {
		t.Fatalf("after refused joins: keys %+v, %d join events; want no use spent and no event", list, events.count(nmauth.EventHostJoined))
	}
}
