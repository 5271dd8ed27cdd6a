package batch

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a Writer that records what it is told; while gate is set,
// each Write waits for it to be closed, and the first fails Writes fail,
// or panic when panics is set.
type recorder struct {
	mu        sync.Mutex
	gate      chan struct{}
	fails     int
	panics    bool
	batches   [][]int
	failed    []bool // again, per Failed
	errs      []error
	recovered int
}

var errDown = errors.New("batch test: down")

func (r *recorder) Write(batch []int) error {
	r.mu.Lock()
	gate := r.gate
	r.mu.Unlock()
	if gate != nil {
		<-gate
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fails > 0 {
		r.fails--
		if r.panics {
			panic("write bug")
		}
		return errDown
	}
	r.batches = append(r.batches, slices.Clone(batch))
	return nil
}

func (r *recorder) Failed(batch []int, err error, again bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = append(r.failed, again)
	r.errs = append(r.errs, err)
}

func (r *recorder) Recovered() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recovered++
}

func flush(t *testing.T, q *Queue[int]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n, err := q.Flush(ctx); err != nil {
		t.Fatalf("Flush: %d left, %v", n, err)
	}
}

// TestBatchesInOrder: items queued while a Write runs are applied in
// their order, in batches of at most the size.
func TestBatchesInOrder(t *testing.T) {
	r := &recorder{gate: make(chan struct{})}
	q := New[int](r, 100, 3)
	for i := range 8 {
		if !q.Enqueue(i) {
			t.Fatalf("Enqueue(%d) refused below the bound", i)
		}
	}
	close(r.gate)
	flush(t, q)
	var all []int
	for _, b := range r.batches {
		if len(b) > 3 {
			t.Errorf("a batch of %d, want at most 3", len(b))
		}
		all = append(all, b...)
	}
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7}; !slices.Equal(all, want) {
		t.Errorf("applied %v, want %v", all, want)
	}
}

// TestBound: a full queue refuses, the batch being written counted
// against the bound, and takes items again once it is written.
func TestBound(t *testing.T) {
	r := &recorder{gate: make(chan struct{})}
	q := New[int](r, 2, 1)
	if !q.Enqueue(1) || !q.Enqueue(2) {
		t.Fatal("Enqueue refused below the bound")
	}
	if q.Enqueue(3) {
		t.Error("Enqueue took an item past the bound")
	}
	close(r.gate)
	flush(t, q)
	if !q.Enqueue(4) {
		t.Error("Enqueue refused once the queue was written")
	}
	flush(t, q)
	if want := [][]int{{1}, {2}, {4}}; !slices.EqualFunc(r.batches, want, slices.Equal) {
		t.Errorf("batches %v, want %v", r.batches, want)
	}
}

// TestRetried: a batch that fails is tried again until it is written;
// the Writer is told of each failure, whether the one before failed too,
// and once of the recovery.
func TestRetried(t *testing.T) {
	r := &recorder{fails: 2}
	q := New[int](r, 10, 10)
	q.Enqueue(7)
	flush(t, q)
	if want := []bool{false, true}; !slices.Equal(r.failed, want) || !errors.Is(r.errs[0], errDown) {
		t.Errorf("Failed told %v (%v), want again %v", r.failed, r.errs, want)
	}
	if r.recovered != 1 || len(r.batches) != 1 || !slices.Equal(r.batches[0], []int{7}) {
		t.Errorf("recovered %d times, batches %v; want once and [[7]]", r.recovered, r.batches)
	}
}

// TestPanicRetried: a Write that panics is a failure with its *Panic,
// and the batch is written once Write takes it.
func TestPanicRetried(t *testing.T) {
	r := &recorder{fails: 1, panics: true}
	q := New[int](r, 10, 10)
	q.Enqueue(1)
	flush(t, q)
	var p *Panic
	if len(r.errs) != 1 || !errors.As(r.errs[0], &p) || p.Value != "write bug" || p.Stack == "" {
		t.Fatalf("Failed told %v, want one *Panic with its stack", r.errs)
	}
	if len(r.batches) != 1 {
		t.Errorf("batches %v, want the item written", r.batches)
	}
}

// TestFlushEnds: Flush returns at its context's end with the items that
// wait; with nothing queued it returns at once.
func TestFlushEnds(t *testing.T) {
	r := &recorder{gate: make(chan struct{})}
	q := New[int](r, 10, 1)
	if n, err := q.Flush(context.Background()); n != 0 || err != nil {
		t.Fatalf("Flush of an empty queue: %d, %v", n, err)
	}
	q.Enqueue(1)
	q.Enqueue(2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if n, err := q.Flush(ctx); n != 2 || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Flush past its deadline: %d, %v; want 2 and DeadlineExceeded", n, err)
	}
	close(r.gate)
	flush(t, q)
}

// TestFailing: one line when writes start to fail, none while they keep
// failing, one when they are taken again; Load follows.
func TestFailing(t *testing.T) {
	var logs bytes.Buffer
	f := Failing{Log: slog.New(slog.NewTextHandler(&logs, nil)), Waits: "waits", Panicked: "panicked", Back: "back"}
	f.Failed(3, errors.New("down"), false)
	f.Failed(3, errors.New("down"), true)
	if !f.Load() || strings.Count(logs.String(), "msg=waits") != 1 {
		t.Fatalf("after two failures: Load %v, logs %q", f.Load(), logs.String())
	}
	f.Failed(1, &Panic{Value: "boom", Stack: "the stack"}, false)
	if !strings.Contains(logs.String(), `msg=panicked writes=1 panic=boom stack="the stack"`) {
		t.Errorf("a panic's line: %q", logs.String())
	}
	f.Recovered()
	if f.Load() || !strings.Contains(logs.String(), "msg=back") {
		t.Errorf("after Recovered: Load %v, logs %q", f.Load(), logs.String())
	}
}
