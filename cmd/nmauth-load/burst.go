package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// burstResult is what a burst of simultaneous logins measured.
type burstResult struct {
	*result
	slowest time.Duration
	// noRetryAfter counts 429 and 503 answers without Retry-After.
	noRetryAfter int
	// memory is the server's peak resident memory, when -pid is given.
	memoryBefore, memoryAfter procMemory
}

// procMemory is what /proc/<pid>/status says of a process's memory.
type procMemory struct {
	peakKiB, currentKiB int64 // VmHWM, VmRSS
}

// burstLogins opens n connections and sends n logins at the same moment,
// then waits for every answer. The slowest answer is the one the 5-second
// target of issue 5 is about; a 503 with Retry-After counts as an answer.
func burstLogins(ctx context.Context, o *options, base *api) (*burstResult, error) {
	if o.user == "" || o.password == "" {
		return nil, errors.New("-concurrent-logins needs -user and a password (-password or NMAUTH_LOAD_PASSWORD)")
	}
	n := o.concurrentLogins
	a := newAPI(base.base, n, o.sources, o.timeout)
	defer a.close()
	br := &burstResult{}
	if o.pid > 0 {
		m, err := readProcMemory(o.pid)
		if err != nil {
			return nil, err
		}
		br.memoryBefore = m
	}
	reqs := make([]*http.Request, n)
	for i := range reqs {
		req, err := a.loginRequest(ctx, o.user, o.password)
		if err != nil {
			return nil, err
		}
		reqs[i] = req
	}
	stats := make([]workerStats, n)
	var (
		ready, done sync.WaitGroup
		mu          sync.Mutex
	)
	start := make(chan struct{})
	for i := range reqs {
		ready.Add(1)
		done.Add(1)
		go func(req *http.Request, st *workerStats) {
			defer done.Done()
			st.statuses = map[int]int{}
			ready.Done()
			<-start
			t0 := time.Now()
			ans, err := a.do(req)
			if err != nil {
				st.transport++
				st.firstErr = err
				return
			}
			st.latencies = append(st.latencies, time.Since(t0))
			st.statuses[ans.status]++
			if (ans.status == http.StatusTooManyRequests || ans.status == http.StatusServiceUnavailable) && ans.retryAfter == "" {
				mu.Lock()
				br.noRetryAfter++
				mu.Unlock()
			}
		}(reqs[i], &stats[i])
	}
	ready.Wait()
	t0 := time.Now()
	close(start)
	done.Wait()
	br.result = mergeStats("concurrent-logins", time.Since(t0), stats)
	if len(br.latencies) > 0 {
		br.slowest = br.latencies[len(br.latencies)-1]
	}
	if o.pid > 0 {
		m, err := readProcMemory(o.pid)
		if err != nil {
			return nil, err
		}
		br.memoryAfter = m
	}
	return br, ctx.Err()
}

func printBurst(w io.Writer, o *options, br *burstResult) {
	fmt.Fprintf(w, "concurrent logins: %d sent at once, all answered in %s\n", o.concurrentLogins, fmtDuration(br.elapsed))
	fmt.Fprintf(w, "slowest answer: %s  p50: %s  p99: %s\n",
		fmtDuration(br.slowest), fmtDuration(br.percentile(0.50)), fmtDuration(br.percentile(0.99)))
	other := br.answered() - br.statuses[200] - br.statuses[429] - br.statuses[503]
	fmt.Fprintf(w, "answers: 200×%d 429×%d 503×%d other×%d no-answer×%d; 429/503 without Retry-After: %d\n",
		br.statuses[200], br.statuses[429], br.statuses[503], other, br.transport, br.noRetryAfter)
	if br.firstErr != nil {
		fmt.Fprintf(w, "first request without an answer: %v\n", br.firstErr)
	}
	if o.pid > 0 {
		fmt.Fprintf(w, "server pid %d: peak resident (VmHWM) %s before, %s after; resident now (VmRSS) %s\n", o.pid,
			fmtKiB(br.memoryBefore.peakKiB), fmtKiB(br.memoryAfter.peakKiB), fmtKiB(br.memoryAfter.currentKiB))
	}
}

func fmtKiB(k int64) string { return fmt.Sprintf("%.1f MiB", float64(k)/1024) }

// readProcMemory reads VmHWM and VmRSS of a process from /proc.
func readProcMemory(pid int) (procMemory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procMemory{}, fmt.Errorf("reading the memory of pid %d: %w", pid, err)
	}
	defer f.Close()
	return parseProcStatus(f)
}

// clockTicks is USER_HZ, the unit of the CPU times in /proc/PID/stat: 100
// on every Linux architecture Go supports.
const clockTicks = 100

// readProcCPU returns the user and system CPU time of a process, all its
// threads together.
func readProcCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of pid %d: %w", pid, err)
	}
	return parseProcStat(string(data))
}

// parseProcStat reads utime and stime, fields 14 and 15 of
// /proc/PID/stat. The command name, field 2, is in parentheses and may
// hold spaces and parentheses itself, so fields are counted from the last
// closing one.
func parseProcStat(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("/proc stat: no command name")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, errors.New("/proc stat: too few fields")
	}
	utime, errU := strconv.ParseInt(f[11], 10, 64)
	stime, errS := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(errU, errS); err != nil {
		return 0, fmt.Errorf("/proc stat: %w", err)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

func parseProcStatus(r io.Reader) (procMemory, error) {
	var m procMemory
	found := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmHWM" && key != "VmRSS") {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			return m, fmt.Errorf("/proc status: unexpected %s line %q", key, sc.Text())
		}
		v, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("/proc status: %s: %w", key, err)
		}
		if key == "VmHWM" {
			m.peakKiB = v
		} else {
			m.currentKiB = v
		}
		found++
	}
	if err := sc.Err(); err != nil {
		return m, err
	}
	if found != 2 {
		return m, errors.New("/proc status: no VmHWM and VmRSS lines")
	}
	return m, nil
}

// burstDialer opens the burst's connections: to the target, loopback
// only, the i-th from the i-th of n source addresses. The hosts dial all
// at once, as a fleet's do, each from a machine of its own: a bound on the
// connects in flight only spreads them into the seconds when the server
// is busiest, where its listen queue fills and a dropped SYN is sent again
// a second later.
type burstDialer struct {
	base *url.URL
	n    int
}

func (d *burstDialer) dial(ctx context.Context, i int) (net.Conn, error) {
	addr := d.base.Host
	if d.base.Port() == "" {
		port := "80"
		if d.base.Scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(d.base.Hostname(), port)
	}
	nd := &net.Dialer{Control: loopbackOnly, LocalAddr: sourceAddr(i, d.n), KeepAlive: 30 * time.Second}
	conn, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil || d.base.Scheme != "https" {
		return conn, err
	}
	tc := tls.Client(conn, &tls.Config{ServerName: d.base.Hostname(), MinVersion: tls.VersionTLS12})
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}

// burstHost is one host of the burst: its request, built once, and its
// keep-alive connection. The goroutine that dials the connection writes
// the request on it at once, with one write, and reads the answer itself,
// so that no turn of another goroutine stands between the connect and the
// request: a server reading with a header deadline sees the request as
// soon as the connection is open.
type burstHost struct {
	i       int
	request []byte
	conn    net.Conn
	rd      *bufio.Reader
	stop    func() bool // stops closing conn when the context ends
}

// hostLoginRequest is the HTTP/1.1 request of one host login.
func hostLoginRequest(base *url.URL, id, password string) ([]byte, error) {
	body, err := json.Marshal(hostAuthRequest{ID: id, Password: password})
	if err != nil {
		return nil, err
	}
	target := (&url.URL{Path: base.Path + "/api/hosts/adm/authenticate"}).RequestURI()
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: nmauth-load\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		target, base.Host, len(body))
	b.Write(body)
	return b.Bytes(), nil
}

// login sends the host's request and returns the answer's status. A
// connection that fails or ends without a whole answer is closed and
// the error returned: the caller counts it as a request without an answer,
// and the next login dials again. The whole exchange ends by deadline.
func (h *burstHost) login(ctx context.Context, d *burstDialer, deadline time.Time) (int, error) {
	if h.conn == nil {
		dctx, cancel := context.WithDeadline(ctx, deadline)
		conn, err := d.dial(dctx, h.i)
		cancel()
		if err != nil {
			return 0, err
		}
		h.conn = conn
		h.stop = context.AfterFunc(ctx, func() { conn.Close() })
		if h.rd == nil {
			h.rd = bufio.NewReaderSize(conn, 2048)
		} else {
			h.rd.Reset(conn)
		}
	}
	h.conn.SetDeadline(deadline)
	if _, err := h.conn.Write(h.request); err != nil {
		h.close()
		return 0, err
	}
	resp, err := http.ReadResponse(h.rd, nil)
	if err != nil {
		h.close()
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		h.close()
		return 0, err
	}
	if resp.Close {
		h.close()
	}
	return resp.StatusCode, nil
}

func (h *burstHost) close() {
	if h.conn == nil {
		return
	}
	h.stop()
	h.conn.Close()
	h.conn = nil
}
