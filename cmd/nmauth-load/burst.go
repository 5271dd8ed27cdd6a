package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
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
