package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// errExhausted ends a scenario whose requests are used up before its time
// or count bound, as verify-totp's pre-auth tokens are.
var errExhausted = errors.New("no more requests")

// source makes the next request of a scenario. It is called from every
// client at once and returns errExhausted when it has no more.
type source func(ctx context.Context) (*requestSpec, error)

// requestSpec is one request and what to do once it is answered.
type requestSpec struct {
	req *http.Request
	// from, when not negative, picks the source address the request goes
	// out from (modulo -sources), as a client that keeps its address;
	// negative takes the next in turn.
	from int
	// done, when set, learns the status of the answer.
	done func(status int)
	// answered, when set, gets the whole answer.
	answered func(answer)
}

// bounds stop a scenario: after d (0 for no time bound) or after n requests
// (0 for no count bound), whichever comes first.
type bounds struct {
	clients int
	d       time.Duration
	n       int
	// rate, when positive, paces the requests of all clients at this many
	// a second: request k is due at k/rate after the start, and its
	// latency counts from when it was due, so that a server that falls
	// behind shows in the latencies rather than in a slower schedule.
	rate float64
}

// result is what one scenario measured.
type result struct {
	name      string
	elapsed   time.Duration
	latencies []time.Duration // of every answered request, sorted
	statuses  map[int]int
	transport int // requests that got no answer
	firstErr  error
	// serverCPU is the CPU time the server process spent meanwhile, when
	// its pid is known.
	serverCPU time.Duration
	// toolCPU is the CPU time this tool spent meanwhile, measured with
	// serverCPU: on one machine the two share its cores, so that a rate
	// is bound by their sum per request, not by the server's alone.
	toolCPU time.Duration
}

// add merges another round of the same scenario into r.
func (r *result) add(o *result) {
	r.elapsed += o.elapsed
	r.latencies = append(r.latencies, o.latencies...)
	sort.Slice(r.latencies, func(i, j int) bool { return r.latencies[i] < r.latencies[j] })
	for s, c := range o.statuses {
		r.statuses[s] += c
	}
	r.transport += o.transport
	r.serverCPU += o.serverCPU
	r.toolCPU += o.toolCPU
	if r.firstErr == nil {
		r.firstErr = o.firstErr
	}
}

func (r *result) answered() int { return len(r.latencies) }

func (r *result) ok() int {
	n := 0
	for s, c := range r.statuses {
		if s >= 200 && s < 300 {
			n += c
		}
	}
	return n
}

func (r *result) perSecond(n int) float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(n) / r.elapsed.Seconds()
}

// percentile returns the latency below which a fraction p of the answers
// came, by the nearest-rank method.
func (r *result) percentile(p float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	i := int(float64(len(r.latencies))*p+0.999999) - 1
	return r.latencies[min(max(i, 0), len(r.latencies)-1)]
}

// errorSummary lists the answers that were not 2xx by status, and the
// requests that got no answer.
func (r *result) errorSummary() string {
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(r.statuses)) {
		if s < 200 || s >= 300 {
			parts = append(parts, fmt.Sprintf("%d×%d", s, r.statuses[s]))
		}
	}
	if r.transport > 0 {
		parts = append(parts, fmt.Sprintf("no-answer×%d", r.transport))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// workerStats is one client's share of a result, merged at the end.
type workerStats struct {
	latencies []time.Duration
	statuses  map[int]int
	transport int
	firstErr  error
}

// drive runs one scenario with b.clients concurrent clients until a bound
// is reached or the source is used up. Requests in flight when the time is
// up are answered and counted; none starts after it.
func drive(ctx context.Context, a *api, name string, next source, b bounds) (*result, error) {
	var (
		claimed  atomic.Int64
		paced    atomic.Int64
		wg       sync.WaitGroup
		stats    = make([]workerStats, b.clients)
		failOnce sync.Once
		failure  error
	)
	start := time.Now()
	deadline := start.Add(b.d)
	for w := range stats {
		wg.Add(1)
		go func(st *workerStats) {
			defer wg.Done()
			st.statuses = map[int]int{}
			for ctx.Err() == nil {
				if b.d > 0 && !time.Now().Before(deadline) {
					return
				}
				if b.n > 0 && claimed.Add(1) > int64(b.n) {
					return
				}
				due := time.Now()
				if b.rate > 0 {
					due = start.Add(time.Duration(float64(paced.Add(1)-1) / b.rate * float64(time.Second)))
					if b.d > 0 && !due.Before(deadline) {
						return
					}
					time.Sleep(time.Until(due))
				}
				spec, err := next(ctx)
				if errors.Is(err, errExhausted) {
					return
				}
				if err != nil {
					failOnce.Do(func() { failure = err })
					return
				}
				t0 := due
				if b.rate <= 0 {
					t0 = time.Now()
				}
				ans, err := a.doFrom(spec.req, spec.from)
				if err != nil {
					if ctx.Err() == nil {
						st.transport++
						if st.firstErr == nil {
							st.firstErr = err
						}
					}
					continue
				}
				st.latencies = append(st.latencies, time.Since(t0))
				st.statuses[ans.status]++
				if spec.done != nil {
					spec.done(ans.status)
				}
				if spec.answered != nil {
					spec.answered(ans)
				}
			}
		}(&stats[w])
	}
	wg.Wait()
	if failure != nil {
		return nil, fmt.Errorf("%s: %w", name, failure)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return mergeStats(name, time.Since(start), stats), nil
}

func mergeStats(name string, elapsed time.Duration, stats []workerStats) *result {
	r := &result{name: name, elapsed: elapsed, statuses: map[int]int{}}
	for _, st := range stats {
		r.latencies = append(r.latencies, st.latencies...)
		for s, c := range st.statuses {
			r.statuses[s] += c
		}
		r.transport += st.transport
		if r.firstErr == nil {
			r.firstErr = st.firstErr
		}
	}
	sort.Slice(r.latencies, func(i, j int) bool { return r.latencies[i] < r.latencies[j] })
	return r
}

// printResults writes one line per scenario. The ratio is the rate of 2xx
// answers over that of healthz in the same run. With the server's pid, two
// last columns give the server's CPU time per answered request, which
// other load on the machine does not inflate as it does latency, and this
// tool's own.
func printResults(w io.Writer, results []*result, withCPU bool) {
	var base float64
	for _, r := range results {
		if r.name == "healthz" {
			base = r.perSecond(r.ok())
		}
	}
	cpuHeader := ""
	if withCPU {
		cpuHeader = fmt.Sprintf(" %12s %12s", "srv-cpu/req", "tool-cpu/req")
	}
	fmt.Fprintf(w, "%-12s %9s %10s %10s %10s %10s %10s%s  %s\n",
		"scenario", "requests", "req/s", "ok/s", "p50", "p99", "vs healthz", cpuHeader, "errors")
	for _, r := range results {
		ratio := "n/a"
		if base > 0 {
			ratio = fmt.Sprintf("%.3f", r.perSecond(r.ok())/base)
		}
		cpu := ""
		if withCPU {
			n := time.Duration(max(r.answered(), 1))
			cpu = fmt.Sprintf(" %12s %12s", fmtDuration(r.serverCPU/n), fmtDuration(r.toolCPU/n))
		}
		fmt.Fprintf(w, "%-12s %9d %10.1f %10.1f %10s %10s %10s%s  %s\n",
			r.name, r.answered(), r.perSecond(r.answered()), r.perSecond(r.ok()),
			fmtDuration(r.percentile(0.50)), fmtDuration(r.percentile(0.99)), ratio, cpu, r.errorSummary())
		if r.firstErr != nil {
			fmt.Fprintf(w, "%-12s first request without an answer: %v\n", "", r.firstErr)
		}
	}
}

func fmtDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond))
	}
}
