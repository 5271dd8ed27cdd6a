package integration

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

// joinID is the host id of the i-th joining host.
func joinID(i int) string { return fmt.Sprintf("join-host-%03d", i) }

// TestEnrollmentKeyUsesUnderConcurrency: joins sent at once, half to one
// replica and half to the other, under a key of uses, admit exactly uses
// hosts on the memory store, SQLite and PostgreSQL; each admitted host
// logs in on the other replica with the secret it chose, every other join
// is refused as an invalid key and leaves no host, and the key lists its
// uses spent.
func TestEnrollmentKeyUsesUnderConcurrency(t *testing.T) {
	const uses, joins = 5, 24
	twoReplicas(t, func(t *testing.T, a, b *nmauth.Authenticator, _ nmauth.Store, _ *replicaClock) {
		ctx := context.Background()
		k, key, err := a.Admin().CreateEnrollmentKey(ctx, nmauth.EnrollmentKey{Name: "fleet", Uses: uses, Networks: []string{"net-1"}})
		if err != nil {
			t.Fatal(err)
		}
		secrets := make([]string, joins)
		errs := make([]error, joins)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range joins {
			secrets[i] = machineSecret(t)
			r := []*nmauth.Authenticator{a, b}[i%2]
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = r.JoinHost(ctx, key, joinID(i), "", secrets[i])
			}()
		}
		close(start)
		wg.Wait()
		// A join past the Store's deadline, which a loaded machine can
		// bring, answers 503 and may or may not have joined: the hosts that
		// log in are counted, whatever their join answered.
		granted, joined := 0, 0
		for i, err := range errs {
			other := []*nmauth.Authenticator{b, a}[i%2]
			_, lerr := other.LoginHost(fromAddr(i), joinID(i), "", secrets[i])
			if lerr == nil {
				joined++
			}
			switch {
			case err == nil:
				granted++
				if lerr != nil {
					t.Errorf("host %d joined but cannot log in: %v", i, lerr)
				}
			case errors.Is(err, nmauth.ErrInvalidEnrollmentKey):
				if !errors.Is(lerr, nmauth.ErrUnknownHost) {
					t.Errorf("host %d was refused but its login = %v, want ErrUnknownHost", i, lerr)
				}
			case errors.Is(err, nmauth.ErrStoreUnavailable):
				t.Logf("join %d: %v", i, err)
			default:
				t.Errorf("join %d: %v", i, err)
			}
		}
		if joined != uses || granted > uses || granted == 0 {
			t.Fatalf("%d hosts joined (%d joins granted) with a key of %d uses", joined, granted, uses)
		}
		list, err := b.Admin().EnrollmentKeys(ctx)
		if err != nil || len(list) != 1 || list[0].ID != k.ID || list[0].Used != uses {
			t.Fatalf("EnrollmentKeys = %+v, %v; want the key with %d uses spent", list, err, uses)
		}
	})
}

// TestEnrollmentKeyRefusals: a join with a key that is expired, revoked
// or deleted, or of a host id that exists, is refused on the other
// replica, and writes nothing: no host, no use spent, and the existing
// host's secret unchanged. A revoked key stays listed, marked.
func TestEnrollmentKeyRefusals(t *testing.T) {
	twoReplicas(t, func(t *testing.T, a, b *nmauth.Authenticator, _ nmauth.Store, clock *replicaClock) {
		ctx := context.Background()
		ad := a.Admin()
		expiring, expKey, err := ad.CreateEnrollmentKey(ctx, nmauth.EnrollmentKey{Name: "short", Unlimited: true, ExpiresAt: clock.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		revoked, revKey, err := ad.CreateEnrollmentKey(ctx, nmauth.EnrollmentKey{Name: "revoked", Uses: 3})
		if err != nil {
			t.Fatal(err)
		}
		deleted, delKey, err := ad.CreateEnrollmentKey(ctx, nmauth.EnrollmentKey{Name: "deleted", Uses: 3})
		if err != nil {
			t.Fatal(err)
		}
		first := machineSecret(t)
		if _, err := b.JoinHost(ctx, expKey, "taken", "", first); err != nil {
			t.Fatalf("first join: %v", err)
		}
		if _, err := b.JoinHost(ctx, expKey, "taken", "", machineSecret(t)); !errors.Is(err, nmauth.ErrExists) {
			t.Fatalf("join of a taken id = %v, want ErrExists", err)
		}
		if _, err := a.LoginHost(fromAddr(1), "taken", "", first); err != nil {
			t.Fatalf("the taken host's own secret no longer logs in: %v", err)
		}
		if err := ad.RevokeEnrollmentKey(ctx, revoked.ID); err != nil {
			t.Fatal(err)
		}
		if err := ad.DeleteEnrollmentKey(ctx, deleted.ID); err != nil {
			t.Fatal(err)
		}
		clock.add(time.Hour)
		for name, key := range map[string]string{"expired": expKey, "revoked": revKey, "deleted": delKey} {
			id := "refused-" + name
			secret := machineSecret(t)
			if _, err := b.JoinHost(ctx, key, id, "", secret); !errors.Is(err, nmauth.ErrInvalidEnrollmentKey) {
				t.Errorf("join with the %s key = %v, want ErrInvalidEnrollmentKey", name, err)
			}
			if _, err := a.LoginHost(fromAddr(2), id, "", secret); !errors.Is(err, nmauth.ErrUnknownHost) {
				t.Errorf("join with the %s key left a host (its login = %v)", name, err)
			}
		}
		list, err := b.Admin().EnrollmentKeys(ctx)
		if err != nil || len(list) != 2 {
			t.Fatalf("EnrollmentKeys = %+v, %v; want the expired and the revoked key", list, err)
		}
		for _, k := range list {
			switch k.ID {
			case expiring.ID:
				if k.Used != 1 {
					t.Errorf("the expired key has %d uses spent, want 1 (the refused joins spent none)", k.Used)
				}
			case revoked.ID:
				if k.RevokedAt.IsZero() || k.Used != 0 {
					t.Errorf("the revoked key lists as %+v, want it marked revoked with no use spent", k)
				}
			default:
				t.Errorf("unexpected key %+v", k)
			}
		}
	})
}

// TestEnrollmentKeyNotStored: neither a key's secret nor a joined host's
// appears anywhere in the database, SQLite's files or PostgreSQL's rows.
func TestEnrollmentKeyNotStored(t *testing.T) {
	for _, b := range sqlBackends {
		t.Run(b.name, func(t *testing.T) {
			if b.dialect == nmauth.DialectPostgres {
				postgresDSN(t)
			}
			dir := t.TempDir()
			var db *sql.DB
			if b.dialect == nmauth.DialectSQLite {
				db = openSQLite(t, filepath.Join(dir, "nmauth.db"))
			} else {
				db = b.fresh(t)(t)
			}
			a, err := nmauth.New(nmauth.Config{Store: newSQLStore(t, db, b.dialect), Secrets: [][]byte{writesRoot}, ClientRate: -1})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			_, key, err := a.Admin().CreateEnrollmentKey(ctx, nmauth.EnrollmentKey{Name: "ci", Uses: 2, Networks: []string{"net-1"}})
			if err != nil {
				t.Fatal(err)
			}
			hostSecret := machineSecret(t)
			if _, err := a.JoinHost(ctx, key, "joined", "", hostSecret); err != nil {
				t.Fatal(err)
			}
			secret := strings.Split(strings.TrimPrefix(key, "nmauth_ek_"), "_")[1]
			var stored []byte
			if b.dialect == nmauth.DialectSQLite {
				files, _ := filepath.Glob(filepath.Join(dir, "*"))
				for _, f := range files {
					data, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					stored = append(stored, data...)
				}
			} else {
				for _, table := range []string{"nmauth_enrollment_keys", "nmauth_hosts"} {
					rows, err := db.Query("SELECT CAST(t.* AS TEXT) FROM " + table + " t")
					if err != nil {
						t.Fatal(err)
					}
					for rows.Next() {
						var row string
						if err := rows.Scan(&row); err != nil {
							t.Fatal(err)
						}
						stored = append(stored, row...)
					}
					rows.Close()
				}
			}
			if !bytes.Contains(stored, []byte("joined")) {
				t.Fatal("the scan did not read the database: the joined host is not in it")
			}
			for name, s := range map[string]string{"key": key, "key secret": secret, "host secret": hostSecret} {
				if bytes.Contains(stored, []byte(s)) {
					t.Errorf("the %s is in the database in the clear", name)
				}
			}
		})
	}
}
