package nmauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/nmauth/nmauth/internal/attempt"
	"github.com/nmauth/nmauth/internal/batch"
	"github.com/nmauth/nmauth/internal/state"
)

// HostBatchStore is implemented by a [Store] that can apply the updates
// of many hosts in one transaction; [SQLStore] and [MemoryStore] do.
//
// A right host login whose host has something to write (a client address
// not yet known to it, failures to forget, a machine-secret digest to move
// under the first root secret) gets its token from the record it read, and
// with such a Store its write waits in a bounded queue that one goroutine
// applies in batches: a group commit, one transaction and one sync for
// many hosts. With any other Store, each such login makes its own
// [Store.UpdateHost].
type HostBatchStore interface {
	// UpdateHosts applies updates in one transaction, each as UpdateHost
	// would apply it alone, those of one host in the order given. An
	// update whose record is missing gets [ErrNotFound] in its Err, one
	// whose record cannot be decoded a [*BrokenRecordError], one whose Fn
	// returns an error that error: none of them writes anything or stops
	// the others. The error returned is a failure of the whole batch,
	// which then writes nothing, whatever the updates' Err say. Fn may
	// run more than once, as UpdateHost's fn may.
	UpdateHosts(ctx context.Context, updates []HostUpdate) error
}

// HostUpdate is one update of [HostBatchStore.UpdateHosts].
type HostUpdate struct {
	// ID is the host's id.
	ID string
	// Fn changes a copy of the host's record, as the fn of
	// [Store.UpdateHost] does.
	Fn func(*Host) error
	// Err is set by UpdateHosts: nil when the update is written.
	Err error
}

// defaultHostWriteQueue is the default of [Config.HostWriteQueue].
const defaultHostWriteQueue = 16384

// hostWriteBatch bounds how many writes one transaction applies.
const hostWriteBatch = 1024

// hostWriteTimeout bounds one batch's transaction; a batch that fails is
// tried again until it is written (see [batch.Writer]).
const hostWriteTimeout = 10 * time.Second

// hostWrite is the write of one right host login, made from what the
// login read: it applies only while the host's digest is still the one
// checked and the host is not disabled, so a change made since (a new
// secret, a disable) is never undone by it.
type hostWrite struct {
	id, checked, credential, client string
	// failures, blocked and clients are the host's failure state as the
	// login read it: its failures are forgotten only if none was counted
	// since, so that a failure counted after the login is never lost.
	failures int
	blocked  time.Time
	clients  []state.Client
	// generation is the host's generation as the login read it.
	generation uint64
	// asRead is set by apply: whether the write found the host as read,
	// and so left it as seedHost cached it.
	asRead bool
}

// newHostWrite is the write that grantLogin would make for a right
// secret checked against acc's stored credential.
func newHostWrite(id string, acc account, credential, client string) hostWrite {
	return hostWrite{id: id, checked: *acc.hash, credential: credential, client: client,
		failures: *acc.failures, blocked: *acc.blocked, clients: slices.Clone(*acc.clients),
		generation: acc.host.State.v.Generation}
}

// apply makes the write in h (see applyTo), the Fn of its [HostUpdate].
func (w *hostWrite) apply(h *Host) (err error) {
	w.asRead, err = w.applyTo(h)
	return err
}

// applyTo makes the write in h: as grantLogin's update does when the
// failure state is the one read, else it only marks the client known. It
// reports whether h's failure state and generation were the ones read.
func (w *hostWrite) applyTo(h *Host) (asRead bool, err error) {
	acc := hostAccount(h)
	switch {
	case *acc.hash != w.checked:
		return false, errHashChanged
	case *acc.disabled:
		return false, ErrInvalidCredentials
	}
	if w.failures == *acc.failures && w.blocked.Equal(*acc.blocked) && sameClients(w.clients, *acc.clients) {
		attempt.Grant(acc.counts, w.client)
		asRead = h.State.v.Generation == w.generation
	} else {
		attempt.Entry(acc.clients, w.client).Known = true
	}
	if w.credential != "" {
		*acc.hash = w.credential
	}
	return asRead, nil
}

func sameClients(a, b []state.Client) bool {
	return slices.EqualFunc(a, b, func(x, y state.Client) bool {
		return x.Client == y.Client && x.Failures == y.Failures && x.Known == y.Known && x.BlockedUntil.Equal(y.BlockedUntil)
	})
}

// hostWriter queues the writes of right host logins and applies them in
// batches (see [batch.Queue]); so writes of one host are applied in the
// order they were queued, and an Authenticator left without
// [Authenticator.Shutdown] leaves no goroutine behind once its writes are
// made.
type hostWriter struct {
	store HostBatchStore
	log   *slog.Logger
	// lost is called with the host of each write not made as its login
	// read the host (not applied, applied to a host changed since, or in a
	// batch the Store did not take): its cached credential is dropped.
	lost func(id string)
	// failing is set while the Store does not take a batch.
	failing batch.Failing
	queue   *batch.Queue[hostWrite]
}

// newHostWriter returns the writer of store, which queues at most bound
// writes, or nil when store does not batch or bound is negative.
func newHostWriter(store Store, bound int, log *slog.Logger) *hostWriter {
	b, ok := store.(HostBatchStore)
	if !ok || bound < 0 {
		return nil
	}
	q := &hostWriter{store: b, log: log, lost: func(string) {}, failing: batch.Failing{Log: log,
		Waits:    "host login writes wait for the store",
		Panicked: "the store panicked in update hosts; host login writes wait for it",
		Back:     "host login writes reach the store again"}}
	q.queue = batch.New[hostWrite](q, bound, hostWriteBatch)
	return q
}

// enqueue queues w; it reports false, queuing nothing, when the queue is
// full.
func (q *hostWriter) enqueue(w hostWrite) bool { return q.queue.Enqueue(w) }

// Write applies batch in one UpdateHosts. A write whose host changed
// since its login's read, or is gone, is dropped as grantLogin's update
// would refuse it; a broken record is logged.
func (q *hostWriter) Write(batch []hostWrite) error {
	ctx, cancel := context.WithTimeout(context.Background(), hostWriteTimeout)
	defer cancel()
	updates := make([]HostUpdate, len(batch))
	for i := range batch {
		updates[i] = HostUpdate{ID: batch[i].id, Fn: batch[i].apply}
	}
	if err := q.store.UpdateHosts(ctx, updates); err != nil {
		return err
	}
	for i, u := range updates {
		if errors.Is(u.Err, ErrBrokenRecord) {
			q.log.Error("host login write skipped: broken record", "host", u.ID, "err", u.Err)
		}
		if u.Err != nil || !batch[i].asRead {
			q.lost(u.ID)
		}
	}
	return nil
}

// Failed drops the cached credentials of a batch the Store did not take.
// The batch waits for the Store; one line says so, and one more when it
// takes it (see [batch.Failing]).
func (q *hostWriter) Failed(writes []hostWrite, err error, again bool) {
	q.failing.Failed(len(writes), err, again)
	for i := range writes {
		q.lost(writes[i].id)
	}
}

func (q *hostWriter) Recovered() { q.failing.Recovered() }

// Shutdown waits until the writes of host logins that wait in the queue
// (see [HostBatchStore]) are made, or until ctx ends, which it returns
// with the number of writes left, and ends the background read of the
// hosts' known addresses if it is still under way (see knownhosts.go).
// Call it once the server has stopped taking requests, before the process
// ends: [http.Server.Shutdown], then this. The Authenticator stays usable;
// writes queued later are made as these were, and the host-login gate
// learns known addresses from logins alone.
func (a *Authenticator) Shutdown(ctx context.Context) error {
	a.scan.stop()
	if a.writes == nil {
		return nil
	}
	if n, err := a.writes.queue.Flush(ctx); err != nil {
		return fmt.Errorf("nmauth: %d host login writes not made: %w", n, err)
	}
	return nil
}
