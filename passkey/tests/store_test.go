package tests_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/passkey"
)

// TestStoreContract checks every Store the package ships against the
// contract written on the interface.
func TestStoreContract(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		for _, c := range []struct {
			name string
			run  func(t *testing.T, s passkey.Store)
		}{
			{"records", testRecords},
			{"atomic updates", testAtomicUpdates},
			{"challenges", testChallenges},
			{"one take of a challenge", testConcurrentTakes},
			{"room for challenges", testChallengeLimit},
			{"cancellation", testCancellation},
		} {
			t.Run(c.name, func(t *testing.T) {
				open, _ := b.fresh(t)
				c.run(t, open(t))
			})
		}
	})
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func testRecord(user string, handle byte, keys ...string) passkey.Record {
	r := passkey.Record{User: user, Handle: []byte{handle, 1, 2, 3}, Account: t0}
	for i, k := range keys {
		r.Passkeys = append(r.Passkeys, passkey.Passkey{
			ID: []byte(k), Name: k, PublicKey: []byte{0xa5, byte(i)}, SignCount: uint32(i),
			Transports: []string{"usb", "nfc"}, BackupEligible: true, CreatedAt: t0.Add(time.Duration(i) * time.Second),
		})
	}
	return r
}

// sameRecord compares records, an empty list of passkeys as none.
func sameRecord(a, b passkey.Record) bool {
	if len(a.Passkeys) == 0 && len(b.Passkeys) == 0 {
		a.Passkeys, b.Passkeys = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

func testRecords(t *testing.T, s passkey.Store) {
	ctx := context.Background()
	if _, err := s.GetRecord(ctx, "alice"); !errors.Is(err, nmauth.ErrNotFound) {
		t.Fatalf("GetRecord of none: %v, want ErrNotFound", err)
	}
	alice := testRecord("alice", 1, "k1", "k2")
	if err := s.CreateRecord(ctx, alice); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]passkey.Record{"the same user": testRecord("alice", 9), "the same handle": testRecord("bob", 1)} {
		if err := s.CreateRecord(ctx, r); !errors.Is(err, nmauth.ErrExists) {
			t.Errorf("CreateRecord of %s: %v, want ErrExists", name, err)
		}
	}
	got, err := s.GetRecord(ctx, "alice")
	if err != nil || !sameRecord(got, alice) {
		t.Fatalf("GetRecord = %+v, %v; want %+v", got, err, alice)
	}
	got.Passkeys[0].Name = "changed by the caller"
	got.Handle[0] = 0xff
	if again, _ := s.RecordByHandle(ctx, alice.Handle); !sameRecord(again, alice) {
		t.Fatalf("RecordByHandle = %+v after the caller changed its copy; want %+v", again, alice)
	}
	if _, err := s.RecordByHandle(ctx, []byte{7}); !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("RecordByHandle of none: %v, want ErrNotFound", err)
	}

	refusal := errors.New("refused by the callback")
	err = s.UpdateRecord(ctx, "alice", func(r *passkey.Record) error {
		r.Passkeys = nil
		return refusal
	})
	if err != refusal {
		t.Errorf("UpdateRecord with a failing callback: %v, want its error unchanged", err)
	}
	if got, _ := s.GetRecord(ctx, "alice"); !sameRecord(got, alice) {
		t.Errorf("a failed update wrote %+v", got)
	}
	err = s.UpdateRecord(ctx, "alice", func(r *passkey.Record) error {
		r.User = "mallory"
		r.Passkeys[1].SignCount, r.Passkeys[1].LastUsedAt = 41, t0.Add(time.Hour)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	alice.Passkeys[1].SignCount, alice.Passkeys[1].LastUsedAt = 41, t0.Add(time.Hour)
	if got, _ := s.GetRecord(ctx, "alice"); !sameRecord(got, alice) {
		t.Errorf("after an update: %+v, want %+v", got, alice)
	}
	if _, err := s.GetRecord(ctx, "mallory"); !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("an update moved the record: %v", err)
	}
	if err := s.UpdateRecord(ctx, "nobody", func(*passkey.Record) error { return nil }); !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("UpdateRecord of none: %v, want ErrNotFound", err)
	}

	for range 2 {
		if err := s.DeleteRecord(ctx, "alice"); err != nil {
			t.Fatalf("DeleteRecord: %v", err)
		}
	}
	if _, err := s.GetRecord(ctx, "alice"); !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("after delete: %v, want ErrNotFound", err)
	}
	if err := s.CreateRecord(ctx, testRecord("bob", 1)); err != nil {
		t.Errorf("the handle of a deleted record is not free: %v", err)
	}
}

// testAtomicUpdates adds 30 passkeys to one record from 30 goroutines:
// none may be lost.
func testAtomicUpdates(t *testing.T, s passkey.Store) {
	ctx := context.Background()
	if err := s.CreateRecord(ctx, testRecord("alice", 1)); err != nil {
		t.Fatal(err)
	}
	const n = 30
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- s.UpdateRecord(ctx, "alice", func(r *passkey.Record) error {
				r.Passkeys = append(r.Passkeys, passkey.Passkey{ID: fmt.Appendf(nil, "k%d", i), CreatedAt: t0})
				return nil
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.GetRecord(ctx, "alice"); len(got.Passkeys) != n {
		t.Errorf("%d passkeys after %d concurrent additions", len(got.Passkeys), n)
	}
}

func testChallenges(t *testing.T, s passkey.Store) {
	ctx := context.Background()
	c := passkey.Challenge{Key: "k1", Flow: passkey.FlowRegister, User: "alice", Handle: []byte{1, 2}, Name: "laptop", Expires: t0.Add(time.Minute)}
	if err := s.PutChallenge(ctx, c, t0, 100); err != nil {
		t.Fatal(err)
	}
	if err := s.PutChallenge(ctx, c, t0, 100); !errors.Is(err, nmauth.ErrExists) {
		t.Errorf("a challenge put twice: %v, want ErrExists", err)
	}
	got, err := s.TakeChallenge(ctx, "k1")
	if err != nil || !reflect.DeepEqual(got, c) {
		t.Fatalf("TakeChallenge = %+v, %v; want %+v", got, err, c)
	}
	if _, err := s.TakeChallenge(ctx, "k1"); !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("a challenge taken twice: %v, want ErrNotFound", err)
	}
	// A put drops what expired before its now, and keeps the rest.
	old := passkey.Challenge{Key: "old", Flow: passkey.FlowPasswordless, Expires: t0.Add(time.Minute)}
	live := passkey.Challenge{Key: "live", Flow: passkey.FlowPasswordless, Expires: t0.Add(time.Hour)}
	for _, c := range []passkey.Challenge{old, live} {
		if err := s.PutChallenge(ctx, c, t0, 100); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutChallenge(ctx, passkey.Challenge{Key: "new", Flow: passkey.FlowSecondFactor, User: "bob", Expires: t0.Add(2 * time.Hour)}, t0.Add(2*time.Minute), 100); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TakeChallenge(ctx, "old"); !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("an expired challenge survived a later put: %v", err)
	}
	if _, err := s.TakeChallenge(ctx, "live"); err != nil {
		t.Errorf("a live challenge was dropped: %v", err)
	}
}

// testChallengeLimit fills a flow's room: the put past it is
// ErrChallengesFull and stores nothing, other flows keep their own room,
// and a challenge taken or expired makes room again.
func testChallengeLimit(t *testing.T, s passkey.Store) {
	ctx := context.Background()
	put := func(key string, flow passkey.Flow, now time.Time) error {
		return s.PutChallenge(ctx, passkey.Challenge{Key: key, Flow: flow, Expires: now.Add(time.Minute)}, now, 3)
	}
	for i := range 3 {
		if err := put(fmt.Sprint("p", i), passkey.FlowPasswordless, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if err := put("p3", passkey.FlowPasswordless, t0.Add(3*time.Second)); !errors.Is(err, passkey.ErrChallengesFull) {
		t.Fatalf("a put past the room of its flow: %v, want ErrChallengesFull", err)
	}
	if _, err := s.TakeChallenge(ctx, "p3"); !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("a refused put stored its challenge: %v", err)
	}
	if err := put("r0", passkey.FlowRegister, t0.Add(3*time.Second)); err != nil {
		t.Errorf("another flow with room: %v", err)
	}
	if _, err := s.TakeChallenge(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	if err := put("p4", passkey.FlowPasswordless, t0.Add(4*time.Second)); err != nil {
		t.Errorf("a put after a take made room: %v", err)
	}
	if err := put("p5", passkey.FlowPasswordless, t0.Add(5*time.Second)); !errors.Is(err, passkey.ErrChallengesFull) {
		t.Errorf("full again: %v, want ErrChallengesFull", err)
	}
	// p0 expires at t0+1m: the put after it finds room.
	if err := put("p6", passkey.FlowPasswordless, t0.Add(time.Minute)); err != nil {
		t.Errorf("a put after a challenge expired: %v", err)
	}
}

// testConcurrentTakes takes one challenge from 20 goroutines: exactly one
// gets it.
func testConcurrentTakes(t *testing.T, s passkey.Store) {
	ctx := context.Background()
	if err := s.PutChallenge(ctx, passkey.Challenge{Key: "k", Flow: passkey.FlowPasswordless, Expires: t0.Add(time.Hour)}, t0, 100); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			_, err := s.TakeChallenge(ctx, "k")
			got <- err
		})
	}
	wg.Wait()
	close(got)
	taken := 0
	for err := range got {
		switch {
		case err == nil:
			taken++
		case !errors.Is(err, nmauth.ErrNotFound):
			t.Errorf("TakeChallenge: %v", err)
		}
	}
	if taken != 1 {
		t.Errorf("%d of 20 concurrent takes got the challenge, want 1", taken)
	}
}

func testCancellation(t *testing.T, s passkey.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.GetRecord(ctx, "alice"); err == nil || errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("GetRecord with a cancelled context: %v, want an error", err)
	}
	if err := s.CreateRecord(ctx, testRecord("alice", 1)); err == nil {
		t.Error("CreateRecord with a cancelled context succeeded")
	}
	if _, err := s.TakeChallenge(ctx, "k"); err == nil || errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("TakeChallenge with a cancelled context: %v, want an error", err)
	}
}

// TestSQLStoreSchema opens a database twice, refuses one whose schema is
// newer than the package, and answers a record it cannot read as broken
// data (500), not as a Store that is down.
func TestSQLStoreSchema(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", nmauth.SQLiteDSN(filepath.Join(t.TempDir(), "passkeys.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := sqlStore(t, db, nmauth.DialectSQLite)
	sqlStore(t, db, nmauth.DialectSQLite)
	if _, err := db.Exec(`INSERT INTO nmauth_passkey_users (name, handle, account, passkeys) VALUES ('alice', x'01', 0, 'not json')`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetRecord(ctx, "alice"); !errors.Is(err, nmauth.ErrDataFault) {
		t.Errorf("a broken record: %v, want ErrDataFault", err)
	}
	if _, err := db.Exec(`INSERT INTO nmauth_passkey_schema_version (version) VALUES (99)`); err != nil {
		t.Fatal(err)
	}
	if _, err := passkey.NewSQLStore(ctx, db, nmauth.DialectSQLite); err == nil {
		t.Error("a schema newer than the package was opened")
	}
	if _, err := passkey.NewSQLStore(ctx, db, "oracle"); err == nil {
		t.Error("an unknown dialect was accepted")
	}
}

// TestChallengeLimitAcrossReplicas puts 40 challenges of one flow at once
// through two Stores over one database, as two replicas do, under a room
// of 5: exactly 5 are stored.
func TestChallengeLimitAcrossReplicas(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		first, again := b.fresh(t)
		replicas := []passkey.Store{first(t), again(t)}
		var wg sync.WaitGroup
		errs := make(chan error, 40)
		for i := range 40 {
			wg.Go(func() {
				c := passkey.Challenge{Key: fmt.Sprint("k", i), Flow: passkey.FlowPasswordless, Expires: t0.Add(time.Minute)}
				errs <- replicas[i%2].PutChallenge(ctx, c, t0, 5)
			})
		}
		wg.Wait()
		close(errs)
		stored := 0
		for err := range errs {
			switch {
			case err == nil:
				stored++
			case !errors.Is(err, passkey.ErrChallengesFull):
				t.Errorf("PutChallenge: %v", err)
			}
		}
		taken := 0
		for i := range 40 {
			if _, err := replicas[0].TakeChallenge(ctx, fmt.Sprint("k", i)); err == nil {
				taken++
			}
		}
		if stored != 5 || taken != 5 {
			t.Errorf("%d puts succeeded and %d challenges were stored, want 5 and 5", stored, taken)
		}
	})
}

// TestChallengeIndexes opens a database of the first schema, as a server
// made it before the challenges were bounded: the store adds the index of
// each flow's challenges, and its put finds expired challenges, and counts
// live ones, through indexes rather than by reading the table.
func TestChallengeIndexes(t *testing.T) {
	db, err := sql.Open("sqlite", nmauth.SQLiteDSN(filepath.Join(t.TempDir(), "passkeys.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{
		`CREATE TABLE nmauth_passkey_schema_version (version BIGINT NOT NULL PRIMARY KEY)`,
		`INSERT INTO nmauth_passkey_schema_version (version) VALUES (1)`,
		`CREATE TABLE nmauth_passkey_users (name TEXT NOT NULL PRIMARY KEY, handle BLOB NOT NULL UNIQUE, account BIGINT NOT NULL, passkeys TEXT NOT NULL)`,
		`CREATE TABLE nmauth_passkey_challenges (challenge_key TEXT NOT NULL PRIMARY KEY, flow TEXT NOT NULL, username TEXT NOT NULL, handle BLOB, name TEXT NOT NULL, expires BIGINT NOT NULL)`,
		`CREATE INDEX nmauth_passkey_challenges_expires ON nmauth_passkey_challenges (expires)`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	sqlStore(t, db, nmauth.DialectSQLite)
	for q, index := range map[string]string{
		`DELETE FROM nmauth_passkey_challenges WHERE expires <= 1`:                                                                    "nmauth_passkey_challenges_expires",
		`SELECT COUNT(*) FROM (SELECT 1 FROM nmauth_passkey_challenges WHERE flow = 'passwordless' AND expires > 1 LIMIT 10) AS live`: "nmauth_passkey_challenges_flow",
	} {
		if plan := queryPlan(t, db, q); !strings.Contains(plan, "INDEX "+index) {
			t.Errorf("%s does not use %s: %s", q, index, plan)
		}
	}
}

// queryPlan is SQLite's plan of q, its details joined.
func queryPlan(t *testing.T, db *sql.DB, q string) string {
	rows, err := db.Query("EXPLAIN QUERY PLAN " + q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	return strings.Join(plan, "; ")
}
