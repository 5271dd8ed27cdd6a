package main

import (
	"bytes"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// gatedSink is a log output that blocks every Write until it is opened,
// as a terminal nobody reads or a full pipe does.
type gatedSink struct {
	open    chan struct{}
	entered chan struct{} // one token per Write that began
	mu      sync.Mutex
	buf     bytes.Buffer
}

func newGatedSink() *gatedSink {
	return &gatedSink{open: make(chan struct{}), entered: make(chan struct{}, 1<<16)}
}

func (s *gatedSink) Write(p []byte) (int, error) {
	s.entered <- struct{}{}
	<-s.open
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *gatedSink) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Split(strings.TrimSuffix(s.buf.String(), "\n"), "\n")
}

// TestLogWriterBlockedSink: while the output takes nothing, every Write
// still returns; the lines past the buffer's bound are dropped and counted,
// and every line that was kept comes out whole and in order.
func TestLogWriterBlockedSink(t *testing.T) {
	sink := newGatedSink()
	w := newLogWriter(sink)
	line := func(i int) string { return fmt.Sprintf("line %07d %s\n", i, strings.Repeat("x", 100)) }
	w.Write([]byte(line(0)))
	<-sink.entered // the writing goroutine now waits on the sink
	n := 2 * maxLogPending / len(line(0))
	for i := 1; i <= n; i++ {
		if k, err := w.Write([]byte(line(i))); k != len(line(i)) || err != nil {
			t.Fatalf("Write = %d, %v", k, err)
		}
	}
	dropped := w.Dropped()
	if dropped == 0 || dropped >= uint64(n) {
		t.Fatalf("%d of %d lines dropped while the sink blocked, want some and not all", dropped, n)
	}
	close(sink.open)
	w.Close()
	got := sink.lines()
	if uint64(len(got)) != uint64(n+1)-dropped {
		t.Errorf("%d lines reached the sink; %d written, %d dropped", len(got), n+1, dropped)
	}
	for i, l := range got {
		if l+"\n" != line(i) {
			t.Fatalf("line %d is %.20q, want %.20q: kept lines come out whole and in order", i, l, line(i))
		}
	}
}

// TestLogWriterCloseFlushes: Close returns after the lines written before
// it reached the output, even one that is slow to take them.
func TestLogWriterCloseFlushes(t *testing.T) {
	sink := newGatedSink()
	w := newLogWriter(sink)
	for i := range 100 {
		fmt.Fprintf(w, "line %d\n", i)
	}
	closed := make(chan struct{})
	go func() { w.Close(); close(closed) }()
	<-sink.entered
	select {
	case <-closed:
		t.Fatal("Close returned while the sink still held the lines")
	default:
	}
	close(sink.open)
	<-closed
	if got := sink.lines(); len(got) != 100 || got[99] != "line 99" {
		t.Errorf("after Close the sink holds %d lines, want 100", len(got))
	}
	fmt.Fprintf(w, "after close\n")
	if got := sink.lines(); got[len(got)-1] != "after close" {
		t.Errorf("a line written after Close did not reach the sink: %q", got[len(got)-1])
	}
	if w.Dropped() != 0 {
		t.Errorf("%d lines dropped", w.Dropped())
	}
}

// TestServeLogLevels: by default nmauthd writes no line per request and
// no line for a right host login, which the metrics count; a wrong one is
// logged at info. With --access-log and --log-level debug both are
// logged, and the lines of the last request are out when the process
// exits.
func TestServeLogLevels(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "nmauth.db")
	env := baseEnv("MASTER_KEY=" + testMasterKey)
	a := seed(t, dir, env, db)
	wrong := map[string]string{"id": a.host, "macaddress": a.mac, "password": "not-the-host-password-at-all-0000"}

	d := startDaemon(t, dir, env, "--db", db, "--log-json", "--metrics-addr", "127.0.0.1:0")
	d.loginHost(a.host, a.mac, a.hostPassword)
	if r := d.call("POST", "/api/hosts/adm/authenticate", "", wrong); r.status != http.StatusUnauthorized {
		t.Fatalf("wrong host password: %d", r.status)
	}
	m := d.metrics(t)
	d.stop()
	if v := m[`nmauthd_logins_total{kind="host",result="success"}`]; v != 1 {
		t.Errorf("host logins counted as success: %v, want 1", v)
	}
	if v, ok := m["nmauthd_log_lines_dropped_total"]; !ok || v != 0 {
		t.Errorf("nmauthd_log_lines_dropped_total = %v (present %v), want 0", v, ok)
	}
	levels := auditLevels(t, d)
	if got := levels["login.succeeded"]; len(got) != 0 {
		t.Errorf("a right host login was logged at %v by default", got)
	}
	if got := levels["login.failed"]; len(got) != 1 || got[0] != "INFO" {
		t.Errorf("a wrong host login was logged at %v, want once at INFO", got)
	}
	if n := requestLines(t, d); n != 0 {
		t.Errorf("%d request lines without --access-log", n)
	}

	d = startDaemon(t, dir, env, "--db", db, "--log-json", "--log-level", "debug", "--access-log")
	d.loginHost(a.host, a.mac, a.hostPassword)
	d.stop()
	if got := auditLevels(t, d)["login.succeeded"]; len(got) != 1 || got[0] != "DEBUG" {
		t.Errorf("with --log-level debug a right host login was logged at %v, want once at DEBUG", got)
	}
	if n := requestLines(t, d); n < 1 {
		t.Errorf("%d request lines with --access-log, want the login's", n)
	}
}

// TestLogLevelFlag: a level that is none of slog's is refused before
// anything runs.
func TestLogLevelFlag(t *testing.T) {
	var out bytes.Buffer
	c := &cli{stdout: &out, stderr: &out, getenv: func(string) string { return "" }}
	if code := c.run([]string{"user", "list", "--log-level", "loud"}); code != exitUsage || !strings.Contains(out.String(), "--log-level") {
		t.Errorf("--log-level loud: exit %d, %q", code, out.String())
	}
}

// auditLevels returns the levels of the daemon's audit lines by event
// type (it runs with --log-json).
func auditLevels(t *testing.T, d *daemon) map[string][]string {
	t.Helper()
	levels := map[string][]string{}
	for _, rec := range logRecords(t, d.stderr.String()) {
		if e, ok := rec["event"].(map[string]any); ok && rec["msg"] == "audit" {
			typ, _ := e["type"].(string)
			level, _ := rec["level"].(string)
			levels[typ] = append(levels[typ], level)
		}
	}
	return levels
}

func requestLines(t *testing.T, d *daemon) int {
	t.Helper()
	n := 0
	for _, rec := range logRecords(t, d.stderr.String()) {
		if rec["msg"] == "request" {
			n++
		}
	}
	return n
}
