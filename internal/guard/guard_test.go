package guard

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

var (
	errUnavailable = errors.New("guard test: unavailable")
	errAnswer      = errors.New("guard test: an answer")
	errFault       = errors.New("guard test: a fault")
)

func keepAnswer(err error) bool { return errors.Is(err, errAnswer) }

// testGuard is a guard of timeout whose clock the test sets. Its lines
// are written before the call that logs them returns.
func testGuard(timeout time.Duration) (*Guard, *bytes.Buffer, *time.Time) {
	logs := &bytes.Buffer{}
	now := time.Unix(1_700_000_000, 0)
	g := New(timeout, errUnavailable, slog.New(slog.NewTextHandler(logs, nil)), func() time.Time { return now })
	return g, logs, &now
}

// TestCallErrors: nil and a kept error come back as they are; a fault is
// logged and wrapped in the unavailable error with the call's name.
func TestCallErrors(t *testing.T) {
	g, logs, _ := testGuard(time.Second)
	ctx := context.Background()
	if err := g.Call(ctx, "ok", func(context.Context) error { return nil }, keepAnswer); err != nil {
		t.Errorf("a call that answers nil: %v", err)
	}
	if err := g.Call(ctx, "answer", func(context.Context) error { return errAnswer }, keepAnswer); err != errAnswer {
		t.Errorf("a kept error: %v; want it unchanged", err)
	}
	if logs.String() != "" {
		t.Errorf("answers logged: %s", logs)
	}
	err := g.Call(ctx, "get thing", func(context.Context) error { return errFault }, keepAnswer)
	if !errors.Is(err, errUnavailable) || !errors.Is(err, errFault) || !strings.Contains(err.Error(), "get thing") {
		t.Errorf("a fault: %v; want it wrapped in the unavailable error, naming the call", err)
	}
	if !strings.Contains(logs.String(), "op=\"get thing\"") {
		t.Errorf("the fault is not logged: %s", logs)
	}
}

// TestCallDeadline: a call that ignores its context is answered at the
// deadline as a fault; one whose caller went away is not logged.
func TestCallDeadline(t *testing.T) {
	g, logs, _ := testGuard(50 * time.Millisecond)
	release := make(chan struct{})
	defer close(release)
	start := time.Now()
	err := g.Call(context.Background(), "deaf", func(context.Context) error { <-release; return nil }, keepAnswer)
	if !errors.Is(err, errUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a deaf call: %v; want unavailable at the deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a deaf call answered after %v", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := logs.String()
	err = g.Call(ctx, "gone", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, keepAnswer)
	if !errors.Is(err, context.Canceled) || logs.String() != before {
		t.Errorf("a caller gone: %v, log %q; want Canceled and no line", err, logs.String()[len(before):])
	}
}

// TestCallPanic: a panic of the call is returned as a *Panic of this call
// alone and logged with its stack at most once per second.
func TestCallPanic(t *testing.T) {
	g, logs, now := testGuard(time.Second)
	boom := func(context.Context) error { panic("boom") }
	for range 3 {
		var p *Panic
		if err := g.Call(context.Background(), "explode", boom, keepAnswer); !errors.As(err, &p) || p.What != "explode" || p.Value != "boom" {
			t.Fatalf("a panicking call: %v; want its *Panic", err)
		}
	}
	if n := strings.Count(logs.String(), "store panicked"); n != 1 {
		t.Errorf("%d panic lines in one second, want 1:\n%s", n, logs)
	}
	if !strings.Contains(logs.String(), "TestCallPanic") {
		t.Errorf("no stack with the panic:\n%s", logs)
	}
	*now = now.Add(2 * time.Second)
	g.Call(context.Background(), "explode", boom, keepAnswer)
	if !strings.Contains(logs.String(), "not_logged_since_last=2") {
		t.Errorf("the second line does not count the two left out:\n%s", logs)
	}
}

// TestFaultLogBounded: at most one line per interval, the next counting
// those left out; a clock that goes back logs at once.
func TestFaultLogBounded(t *testing.T) {
	var logs bytes.Buffer
	now := time.Unix(1_700_000_000, 0)
	l := &faultLog{log: slog.New(slog.NewTextHandler(&logs, nil)), now: func() time.Time { return now }, interval: time.Second}
	for range 50 {
		l.failed("op", errFault)
	}
	now = now.Add(time.Second)
	l.failed("op", errFault)
	now = now.Add(-time.Hour)
	l.failed("op", errFault)
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "not_logged_since_last=49") || !strings.Contains(lines[2], "not_logged_since_last=0") {
		t.Fatalf("log lines %q; want 3, the second counting 49 left out", lines)
	}
}

// TestWorkerReused: a call after one that ended runs on the goroutine
// that ran it, which waits for the next.
func TestWorkerReused(t *testing.T) {
	g, _, _ := testGuard(time.Second)
	g.Call(context.Background(), "first", func(context.Context) error { return nil }, keepAnswer)
	job := make(chan struct{})
	deadline := time.After(5 * time.Second)
	for {
		select {
		case g.idle <- func() { close(job) }:
			<-job
			return
		case <-deadline:
			t.Fatal("no goroutine waits for a call after the first")
		default:
			time.Sleep(time.Millisecond)
		}
	}
}

// TestList: a listing comes back with a kept error beside it, and
// without its value on a fault.
func TestList(t *testing.T) {
	g, _, _ := testGuard(time.Second)
	got, err := List(g, context.Background(), "list", func(context.Context) ([]int, error) { return []int{1, 2}, errAnswer }, keepAnswer)
	if len(got) != 2 || err != errAnswer {
		t.Errorf("a listing with a kept error: %v, %v", got, err)
	}
	got, err = List(g, context.Background(), "list", func(context.Context) ([]int, error) { return []int{1}, errFault }, keepAnswer)
	if got != nil || !errors.Is(err, errUnavailable) {
		t.Errorf("a listing with a fault: %v, %v; want nil and unavailable", got, err)
	}
}

// TestUpdate: fn's own error comes back unchanged; fn called after the
// deadline is not run, so it writes nothing the caller reads.
func TestUpdate(t *testing.T) {
	g, _, _ := testGuard(50 * time.Millisecond)
	errRefused := errors.New("guard test: refused")
	update := func(_ context.Context, _ string, fn func(*int) error) error { v := 1; return fn(&v) }
	if err := Update(g, context.Background(), "update", "k", update, func(*int) error { return errRefused }, keepAnswer); err != errRefused {
		t.Errorf("fn's error: %v; want it unchanged", err)
	}
	late := make(chan func(*int) error, 1)
	slow := func(ctx context.Context, _ string, fn func(*int) error) error {
		<-ctx.Done()
		late <- fn
		return ctx.Err()
	}
	ran := false
	err := Update(g, context.Background(), "update", "k", slow, func(*int) error { ran = true; return nil }, keepAnswer)
	if !errors.Is(err, errUnavailable) {
		t.Errorf("an update past the deadline: %v; want unavailable", err)
	}
	var v int
	if err := (<-late)(&v); !errors.Is(err, context.DeadlineExceeded) || ran {
		t.Errorf("fn after the deadline: %v, ran %v; want DeadlineExceeded and not run", err, ran)
	}
}

// TestAsk: a hook's answer comes back; any error makes it false and
// unavailable.
func TestAsk(t *testing.T) {
	g, _, _ := testGuard(time.Second)
	if ok, err := g.Ask(context.Background(), "hook", func(context.Context) (bool, error) { return true, nil }); !ok || err != nil {
		t.Errorf("a hook that says yes: %v, %v", ok, err)
	}
	if ok, err := g.Ask(context.Background(), "hook", func(context.Context) (bool, error) { return true, errAnswer }); ok || !errors.Is(err, errUnavailable) {
		t.Errorf("a hook that fails: %v, %v; want false and unavailable", ok, err)
	}
}

// TestResult: a value comes back only with nil; an answer past the
// deadline is never read.
func TestResult(t *testing.T) {
	g, _, _ := testGuard(20 * time.Millisecond)
	ctx := context.Background()
	if v, err := Result(g, ctx, "ok", func(context.Context) (int, error) { return 7, nil }, keepAnswer); v != 7 || err != nil {
		t.Errorf("Result = %d, %v; want 7, nil", v, err)
	}
	if v, err := Result(g, ctx, "answer", func(context.Context) (int, error) { return 7, errAnswer }, keepAnswer); v != 0 || err != errAnswer {
		t.Errorf("Result with a kept error = %d, %v; want 0 and the error", v, err)
	}
	slow := func(context.Context) (int, error) { time.Sleep(100 * time.Millisecond); return 7, nil }
	if v, err := Result(g, ctx, "slow", slow, keepAnswer); v != 0 || !errors.Is(err, errUnavailable) {
		t.Errorf("Result past the deadline = %d, %v; want 0, unavailable", v, err)
	}
}

func TestNil(t *testing.T) {
	var p *int
	var m map[string]int
	var f func()
	for _, tc := range []struct {
		v    any
		want bool
	}{{nil, true}, {p, true}, {m, true}, {f, true}, {new(int), false}, {3, false}, {"", false}} {
		if got := Nil(tc.v); got != tc.want {
			t.Errorf("Nil(%#v) = %v; want %v", tc.v, got, tc.want)
		}
	}
}
