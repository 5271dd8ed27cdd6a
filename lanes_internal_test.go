package nmauth

import (
	"context"
	"crypto/sha256"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/nmauth/nmauth/internal/hashfmt"
)

// laneRun is an Authenticator of two hashing slots whose argon2id runs,
// quickAuth's stand-in, each wait for the test to let them end, and tell
// the lanes they were asked for: so that the test sees which logins
// hash at once, and how many slots they hold.
type laneRun struct {
	t *testing.T
	a *Authenticator
	// hashing gets one run of argon2id as it starts: its lanes, and a
	// channel to close to end it.
	hashing chan argonRun
	logins  sync.WaitGroup
}

type argonRun struct {
	lanes uint8
	end   chan struct{}
}

func newLaneRun(t *testing.T) *laneRun {
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	a := quickAuth(t, NewMemoryStore(), clock, func(c *Config) {
		c.PasswordHashConcurrency = 2
		c.PasswordHashQueue = 8
	})
	r := &laneRun{t: t, a: a, hashing: make(chan argonRun, 8)}
	ctx := context.Background()
	for _, name := range []string{"alice", "bob"} {
		if err := a.Admin().CreateUser(ctx, name, "right password"); err != nil {
			t.Fatal(err)
		}
	}
	// carol comes from a system whose argon2id hashes have four lanes:
	// the stand-in's key of her password, under p=4.
	salt := []byte("sixteen byte sal")
	sum := sha256.Sum256(append(append([]byte{}, salt...), "right password"...))
	p4 := hashfmt.Argon2idHash{Params: hashfmt.Params{Memory: 19456, Time: 2, Threads: 4}, Salt: salt, Key: sum[:]}.Encode()
	if _, err := a.Admin().ImportUser(ctx, ImportedUser{Name: "carol", PasswordHash: p4}); err != nil {
		t.Fatal(err)
	}
	a.hasher.ArgonKey = func(password, salt []byte, _, _ uint32, lanes uint8, keyLen uint32) []byte {
		end := make(chan struct{})
		r.hashing <- argonRun{lanes, end}
		<-end
		sum := sha256.Sum256(append(append([]byte{}, salt...), password...))
		return sum[:keyLen]
	}
	return r
}

// login logs name in, in a goroutine of its own, from an address of its
// own.
func (r *laneRun) login(name, addr string) {
	r.logins.Add(1)
	go func() {
		defer r.logins.Done()
		if _, err := r.a.LoginUser(from(addr), name, "right password"); err != nil {
			r.t.Errorf("%s's login: %v", name, err)
		}
	}()
}

// started reads the next argon2id run to start, which must have lanes.
func (r *laneRun) started(lanes uint8, who string) argonRun {
	r.t.Helper()
	run := <-r.hashing
	if run.lanes != lanes {
		r.t.Fatalf("%s's hash runs %d lanes; want %d", who, run.lanes, lanes)
	}
	return run
}

// awaitWaiting yields until n logins wait for the hashing gate, or a hash
// starts that should have waited: its run is then in r.hashing.
func (r *laneRun) awaitWaiting(n int) {
	for r.a.Stats().PasswordHashesWaiting < n && len(r.hashing) == 0 {
		runtime.Gosched()
	}
}

// wantHashing checks the slots held and the logins waiting.
func (r *laneRun) wantHashing(running, waiting int, when string) {
	r.t.Helper()
	if s := r.a.Stats(); s.PasswordHashesRunning != running || s.PasswordHashesWaiting != waiting || len(r.hashing) != 0 {
		r.t.Errorf("%s: %d hashing slots held, %d waiting, %d more hashes started; want %d, %d, none",
			when, s.PasswordHashesRunning, s.PasswordHashesWaiting, len(r.hashing), running, waiting)
	}
}

// TestLoginHoldsASlotPerLane: a login against an imported argon2id hash
// of four lanes, which runs four threads at once, holds every slot of a
// gate of two (a hash of more lanes than the gate has slots still runs,
// alone), and a login that comes meanwhile waits for it rather than
// running beside it: the gate's limit bounds the cores hashing takes.
func TestLoginHoldsASlotPerLane(t *testing.T) {
	r := newLaneRun(t)
	r.login("carol", "192.0.2.1")
	carol := r.started(4, "carol")
	r.wantHashing(2, 0, "carol's hash of four lanes runs")
	r.login("alice", "198.51.100.1")
	r.awaitWaiting(1)
	r.wantHashing(2, 1, "alice's login while carol's hash runs")
	close(carol.end)
	close(r.started(1, "alice").end)
	r.logins.Wait()
	r.wantHashing(0, 0, "both logged in")
}

// TestLoginWaitsForTheSlotsOfItsLanes: a login that finds an argon2id
// hash of four lanes while another hash runs gives its slot back and
// waits for both, before the logins queued behind it; it runs once the
// other ends, alone, and the one queued after it runs then.
func TestLoginWaitsForTheSlotsOfItsLanes(t *testing.T) {
	r := newLaneRun(t)
	r.login("alice", "198.51.100.1")
	alice := r.started(1, "alice")
	r.wantHashing(1, 0, "alice's hash runs")
	r.login("carol", "192.0.2.1")
	r.awaitWaiting(1)
	r.wantHashing(1, 1, "carol's login, which waits for a second slot, beside alice's hash")
	r.login("bob", "203.0.113.1")
	r.awaitWaiting(2)
	r.wantHashing(1, 2, "bob's login, queued after carol's, with a slot free")
	close(alice.end)
	carol := r.started(4, "carol")
	r.wantHashing(2, 1, "carol's hash runs on both slots")
	close(carol.end)
	close(r.started(1, "bob").end)
	r.logins.Wait()
	r.wantHashing(0, 0, "all logged in")
}

// TestVerifyHoldsASlotPerLane: the hasher's verify, which reads the hash
// before it waits, waits for a slot for each lane of an argon2id hash
// (at most the gate's two), and a hash of the house's one lane for one.
func TestVerifyHoldsASlotPerLane(t *testing.T) {
	for _, tc := range []struct {
		lanes uint8
		slots int
	}{{1, 1}, {2, 2}, {4, 2}} {
		h := newPasswordHasher(2, 0, nil)
		entered, end := make(chan struct{}), make(chan struct{})
		h.ArgonKey = func(_, _ []byte, _, _ uint32, _ uint8, keyLen uint32) []byte {
			close(entered)
			<-end
			return make([]byte, keyLen)
		}
		encoded := hashfmt.Argon2idHash{Params: hashfmt.Params{Memory: 19456, Time: 2, Threads: tc.lanes},
			Salt: make([]byte, hashfmt.SaltLen), Key: make([]byte, hashfmt.KeyLen)}.Encode()
		done := make(chan error, 1)
		go func() { _, _, err := h.Verify(context.Background(), encoded, testPassword); done <- err }()
		<-entered
		if running, _ := h.Gate.Load(); running != tc.slots {
			t.Errorf("a hash of %d lanes verifies holding %d slots; want %d", tc.lanes, running, tc.slots)
		}
		close(end)
		if err := <-done; err != nil {
			t.Errorf("verify: %v", err)
		}
		if running, waiting := h.Gate.Load(); running != 0 || waiting != 0 {
			t.Errorf("after verify: %d slots held, %d waiting; want none", running, waiting)
		}
	}
}
