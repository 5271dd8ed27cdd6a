package main

import (
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of the log's buffer and of the wait for it at exit.
const (
	// maxLogPending is how many bytes of lines may wait for the sink;
	// past it a line is dropped, so a blocked sink costs a request one
	// copy and never a wait.
	maxLogPending = 1 << 20
	// logFlushTimeout bounds how long Close waits for a sink that does
	// not take the last lines, so that a stuck terminal cannot hold the
	// process at exit.
	logFlushTimeout = 5 * time.Second
)

// logWriter takes log lines from any goroutine and writes them to its
// sink in batches from one goroutine of its own. A Write copies the line
// into the pending batch and returns; while the sink is busy, lines
// gather and go out in one Write. When more than maxLogPending bytes wait,
// a line is dropped and counted instead (see Dropped): the requests that
// log never wait on the sink. Close writes what waits and makes later
// Writes go straight to the sink.
type logWriter struct {
	sink    io.Writer
	wake    chan struct{} // one token: lines wait
	done    chan struct{} // closed when the writing goroutine ends
	dropped atomic.Uint64
	// report, if set before the first Write, is told from the writing
	// goroutine how many lines were dropped since it was last told.
	report func(n uint64)

	mu      sync.Mutex
	pending []byte
	closed  bool
}

func newLogWriter(sink io.Writer) *logWriter {
	w := &logWriter{sink: sink, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go w.run()
	return w
}

// Write queues one line (slog hands each record to one Write) or drops it
// when the batch is full. It never fails.
func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.sink.Write(p)
	}
	if len(w.pending)+len(p) > maxLogPending {
		w.mu.Unlock()
		w.dropped.Add(1)
		return len(p), nil
	}
	w.pending = append(w.pending, p...)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

// Dropped is the number of lines dropped so far because the sink did not
// keep up.
func (w *logWriter) Dropped() uint64 { return w.dropped.Load() }

// run writes the pending lines whenever some wait, until Close.
func (w *logWriter) run() {
	defer close(w.done)
	var batch []byte
	var reported uint64
	for range w.wake {
		w.mu.Lock()
		batch, w.pending = w.pending, batch[:0]
		closed := w.closed
		w.mu.Unlock()
		if len(batch) > 0 {
			w.sink.Write(batch)
		}
		if d := w.dropped.Load(); d > reported && w.report != nil && !closed {
			w.report(d - reported)
			reported = d
		}
		if closed {
			return
		}
	}
}

// Close writes the lines that wait, waiting at most logFlushTimeout for
// the sink; after it, Write goes straight to the sink. It is safe to call
// more than once.
func (w *logWriter) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	t := time.NewTimer(logFlushTimeout)
	defer t.Stop()
	select {
	case <-w.done:
	case <-t.C:
	}
	return nil
}
