package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The flood of TestSilentFloodLeavesRoomForLogin, as issue 38 found it:
// more connections that never send a byte than nmauthd's file limit
// (20,000 there), from 100 IPv4 /24s.
const (
	floodConns      = 25000
	floodGroups     = 100
	floodFileLimit  = 20000
	floodLoginLimit = 5 * time.Second
)

// TestSilentFloodLeavesRoomForLogin: while 25,000 connections from 100
// /24s (127.1.0.0/24 to 127.1.99.0/24 on loopback) send nothing, and the
// flood keeps replacing them, nmauthd under a file limit of 20,000 answers
// /healthz and a right login from another address (127.0.0.1) within 5 s,
// and says in its log that it closed connections to make room. Before
// the caps, accept failed with "too many open files" and both waited for
// the flood's connections to time out after 60 s. Where the test process
// cannot have the files the flood needs, the flood and nmauthd's limit
// are scaled down together, and the test says so.
func TestSilentFloodLeavesRoomForLogin(t *testing.T) {
	n, limit := floodSize(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "nmauth.db")
	env := baseEnv("MASTER_KEY=" + testMasterKey)
	a := seed(t, dir, env, db)
	var args []string
	if raceBuild {
		// The race detector allows 8,128 goroutines, one a connection.
		args = append(args, "--max-conns", "4000")
	}
	d := startDaemonVia(t, []string{"sh", "-c", `ulimit -n "$0" && exec "$@"`, strconv.Itoa(limit)},
		dir, env, append(args, "--db", db)...)
	addr := strings.TrimPrefix(d.url, "http://")

	f := &silentFlood{addr: addr}
	t.Cleanup(f.close)
	f.open(n)
	opened := f.count()
	t.Logf("the flood holds %d connections (%d dials failed); nmauthd's file limit is %d", opened, f.failed.Load(), limit)
	if opened < n*9/10 {
		t.Errorf("the flood opened %d of %d connections; a dial should not fail while nmauthd can close a silent one", opened, n)
	}
	stop := f.keepUp()
	defer stop()

	client := &http.Client{Timeout: floodLoginLimit, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 5 {
		t0 := time.Now()
		resp, err := client.Get(d.url + "/healthz")
		if err != nil {
			t.Fatalf("/healthz %d under the flood: %v after %s", i, err, time.Since(t0).Round(time.Millisecond))
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/healthz %d under the flood: %d", i, resp.StatusCode)
		}
		body, _ := json.Marshal(map[string]string{"username": a.user, "password": a.password})
		t0 = time.Now()
		resp, err = client.Post(d.url+"/api/users/adm/authenticate", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("right login %d under the flood: %v after %s", i, err, time.Since(t0).Round(time.Millisecond))
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("right login %d under the flood: %d, want 200", i, resp.StatusCode)
		}
	}
	stop()
	if log := d.stderr.String(); !strings.Contains(log, "connection cap reached") {
		t.Errorf("nmauthd did not log that it closed connections to make room:\n%s", log)
	}
	if log := d.stderr.String(); strings.Contains(log, "too many open files") {
		t.Errorf("nmauthd ran out of files:\n%s", log)
	}
}

// floodSize returns the flood's size and nmauthd's file limit: those of
// issue 38, or, when this process cannot raise its own limit to hold the
// flood's ends, both scaled to what it can hold.
func floodSize(t *testing.T) (conns, limit int) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	need := uint64(floodConns + 1024)
	if lim.Cur >= need {
		return floodConns, floodFileLimit
	}
	raised := syscall.Rlimit{Cur: need, Max: max(need, lim.Max)}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
		return floodConns, floodFileLimit
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < 4096 {
		requireCI(t, "the flood needs a limit of at least 4,096 open files (ulimit -n)")
	}
	conns = int(lim.Cur) - 1024
	limit = conns * floodFileLimit / floodConns
	t.Logf("this process may open %d files, not the %d the flood needs: scaled to %d connections against a limit of %d",
		lim.Cur, need, conns, limit)
	return conns, limit
}

// silentFlood holds connections to addr that never send a byte, from
// floodGroups /24s of 127.1.0.0/16.
type silentFlood struct {
	addr   string
	mu     sync.Mutex
	conns  []net.Conn
	next   int // the flood's next source address
	failed atomic.Int64
}

// source is the i-th connection's source address: 127.1.G.H, G its group.
func source(i int) *net.TCPAddr {
	g, h := i%floodGroups, 1+(i/floodGroups)%250
	return &net.TCPAddr{IP: net.IPv4(127, 1, byte(g), byte(h))}
}

func (f *silentFlood) dial(i int) net.Conn {
	dialer := net.Dialer{LocalAddr: source(i), Timeout: 2 * time.Second}
	c, err := dialer.Dial("tcp", f.addr)
	if err != nil {
		f.failed.Add(1)
		return nil
	}
	return c
}

// open dials n connections, 16 at a time; it gives up after 500 failed
// dials, as nmauthd without caps stops accepting.
func (f *silentFlood) open(n int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n && f.failed.Load() < 500; i = int(next.Add(1)) - 1 {
				if c := f.dial(i); c != nil {
					f.mu.Lock()
					f.conns = append(f.conns, c)
					f.mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	f.next = n
}

func (f *silentFlood) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.conns)
}

// keepUp replaces the flood's connections, oldest first, with new silent
// ones until the returned stop is called, as an attacker keeps the
// pressure on.
func (f *silentFlood) keepUp() (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for k := 0; ; k++ {
			select {
			case <-done:
				return
			default:
			}
			c := f.dial(f.next + k)
			f.mu.Lock()
			if len(f.conns) > 0 {
				f.conns[0].Close()
				f.conns = f.conns[1:]
			}
			if c != nil {
				f.conns = append(f.conns, c)
			}
			f.mu.Unlock()
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done); <-stopped })
	}
}

func (f *silentFlood) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = nil
}
