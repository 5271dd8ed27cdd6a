package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"time"
)

// The kinds of fault.
const (
	faultKill    = "kill -9 of a replica, restarted after 2 s"
	faultRestart = "PostgreSQL restarted"
	faultPause   = "PostgreSQL paused (SIGSTOP) for 5 s, past the 3 s store deadline"
	faultDrop    = "the replicas' connections to PostgreSQL dropped"
)

var faultKinds = []string{faultKill, faultRestart, faultPause, faultDrop}

// recoveryLimit is the longest a fault may leave any replica without
// full service once it is over.
const recoveryLimit = 10 * time.Second

// fault is one fault injected and how long service took to come back.
type fault struct {
	Kind      string
	Replica   int // for a kill
	Began     time.Time
	Ended     time.Time
	Recovered time.Duration // -1 if service did not come back
}

// injector applies faults on a schedule drawn from the seed.
type injector struct {
	f   *fleet
	c   *client
	db  *database
	rng *rand.Rand
	log func(format string, args ...any)
}

// apply injects one fault of kind and returns once it is over.
func (in *injector) apply(kind string) (fault, error) {
	ft := fault{Kind: kind, Replica: -1, Began: time.Now()}
	var err error
	switch kind {
	case faultKill:
		r := in.f.replicas[in.rng.IntN(len(in.f.replicas))]
		ft.Replica = r.id
		r.kill9()
		time.Sleep(2 * time.Second)
		err = r.start()
	case faultRestart:
		err = in.db.restart()
	case faultPause:
		if err = in.db.signal(syscall.SIGSTOP); err == nil {
			time.Sleep(5 * time.Second)
			err = in.db.signal(syscall.SIGCONT)
		}
	case faultDrop:
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var n int
		n, err = in.db.dropConnections(ctx)
		cancel()
		in.log("dropped %d connections", n)
	}
	ft.Ended = time.Now()
	if err != nil {
		return ft, fmt.Errorf("%s: %w", kind, err)
	}
	ft.Recovered = in.awaitService()
	return ft, nil
}

// awaitService returns how long after now every replica logs a host in
// with its right secret, -1 past recoveryLimit.
func (in *injector) awaitService() time.Duration {
	start := time.Now()
	pending := map[int]bool{}
	for _, r := range in.f.replicas {
		pending[r.id] = true
	}
	for time.Since(start) < recoveryLimit {
		for _, r := range in.f.replicas {
			if !pending[r.id] {
				continue
			}
			id := in.f.hostIDs[in.rng.IntN(len(in.f.hostIDs))]
			st, _ := in.c.call(r, record{Op: opHostLogin, Account: id, Right: true}, "POST", "/api/hosts/adm/authenticate", "",
				clientAddr(in.rng), map[string]string{"id": id, "password": in.f.hosts[id]})
			if st == 200 {
				delete(pending, r.id)
			}
		}
		if len(pending) == 0 {
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return -1
}
