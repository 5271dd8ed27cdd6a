package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// rightLoginBound is the time within which a right login under a flood
// must answer 200 (issue 28).
const rightLoginBound = 5 * time.Second

// hostBurst runs the burst scenario: -fleet-hosts hosts, each with one
// connection from a source address of its own, log in at one moment and
// then back to back until -d has passed. It reports every answer's status,
// the p99 and the slowest answer, and with -pid the server's peak resident
// memory. A host's first login counts from the burst's moment, its dial
// included; a connection closed without an answer counts as a request
// without one, and the host dials again.
func hostBurst(ctx context.Context, o *options, base *api, log io.Writer) (*result, error) {
	return runHostBurst(ctx, o, &burstDialer{base: base.base, n: o.fleetHosts}, log)
}

func runHostBurst(ctx context.Context, o *options, d *burstDialer, log io.Writer) (*result, error) {
	if o.fleetHosts < 1 || o.fleetHosts > maxSources || o.fleetPassword == "" {
		return nil, fmt.Errorf("needs -fleet-hosts (1 to %d) and a host password (-fleet-password or NMAUTH_LOAD_FLEET_PASSWORD)", maxSources)
	}
	if o.bounds.d <= 0 {
		return nil, errors.New("needs -d, how long the hosts go on logging in")
	}
	n := o.fleetHosts
	hosts := make([]burstHost, n)
	for i := range hosts {
		req, err := hostLoginRequest(d.base, fleetHostID(o.fleetPrefix, i), o.fleetPassword)
		if err != nil {
			return nil, err
		}
		hosts[i] = burstHost{i: i, request: req}
	}
	var before procMemory
	if o.pid > 0 {
		m, err := readProcMemory(o.pid)
		if err != nil {
			return nil, err
		}
		before = m
	}
	stats := make([]workerStats, n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	var t0, deadline time.Time
	for i := range hosts {
		ready.Add(1)
		done.Add(1)
		go func(h *burstHost, st *workerStats) {
			defer done.Done()
			defer h.close()
			st.statuses = map[int]int{}
			ready.Done()
			<-start
			for sent, first := t0, true; ctx.Err() == nil && (first || sent.Before(deadline)); sent, first = time.Now(), false {
				status, err := h.login(ctx, d, sent.Add(o.timeout))
				if err != nil {
					if ctx.Err() == nil {
						st.transport++
						st.firstErr = cmp(st.firstErr, err)
					}
					continue
				}
				st.latencies = append(st.latencies, time.Since(sent))
				st.statuses[status]++
			}
		}(&hosts[i], &stats[i])
	}
	ready.Wait()
	t0 = time.Now()
	deadline = t0.Add(o.bounds.d)
	close(start)
	done.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := mergeStats("burst", time.Since(t0), stats)
	slowest := time.Duration(0)
	if len(r.latencies) > 0 {
		slowest = r.latencies[len(r.latencies)-1]
	}
	fmt.Fprintf(log, "burst: %d hosts at one moment, then back to back for %s: %d answers, 200×%d, errors %s; p99 %s, slowest %s\n",
		n, o.bounds.d, r.answered(), r.statuses[http.StatusOK], r.errorSummary(), fmtDuration(r.percentile(0.99)), fmtDuration(slowest))
	if o.pid > 0 {
		m, err := readProcMemory(o.pid)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "server pid %d: peak resident (VmHWM) %s before, %s after\n", o.pid, fmtKiB(before.peakKiB), fmtKiB(m.peakKiB))
	}
	return r, nil
}

// cmp keeps the first error.
func cmp(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// passwordFlood runs the flood scenario: -c clients send wrong passwords,
// for made-up names and for -user in turn, from the -sources addresses, as
// fast as they are answered, for -d; meanwhile -user, which logged in
// once before from an address of its own, logs in rightly from it again
// and again. The result is the user's right logins; a line tells how many
// answered 200 within 5 s, and what the flood got.
func passwordFlood(ctx context.Context, o *options, a *api, log io.Writer) (*result, error) {
	if o.user == "" || o.password == "" {
		return nil, errors.New("needs -user and a password (-password or NMAUTH_LOAD_PASSWORD)")
	}
	if o.bounds.d <= 0 {
		return nil, errors.New("needs -d, how long the flood lasts")
	}
	// The user's own address: the one after the flood's.
	owner := &api{base: a.base, clients: []*http.Client{newClient(1, o.timeout, sourceAddr(o.sources, o.sources+1))}}
	defer owner.close()
	if _, err := owner.login(ctx, o.user, o.password); err != nil {
		return nil, fmt.Errorf("the user's login before the flood: %w", err)
	}
	floodCtx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		wg       sync.WaitGroup
		sent     atomic.Int64
		mu       sync.Mutex
		flood    = map[int]int{}
		floodErr error
	)
	for range o.bounds.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := map[int]int{}
			defer func() {
				mu.Lock()
				for s, c := range mine {
					flood[s] += c
				}
				mu.Unlock()
			}()
			for floodCtx.Err() == nil {
				k := sent.Add(1)
				name := o.user
				if k%2 == 0 {
					name = fmt.Sprintf("flood-%d", k)
				}
				req, err := a.loginRequest(floodCtx, name, "wrong password "+fmt.Sprint(k))
				if err != nil {
					return
				}
				ans, err := a.do(req)
				if err != nil {
					if floodCtx.Err() == nil {
						mu.Lock()
						floodErr = cmp(floodErr, err)
						mu.Unlock()
						mine[0]++
					}
					continue
				}
				mine[ans.status]++
			}
		}()
	}
	st := workerStats{statuses: map[int]int{}}
	inTime := 0
	t0 := time.Now()
	for deadline := t0.Add(o.bounds.d); time.Now().Before(deadline) && ctx.Err() == nil; {
		req, err := owner.loginRequest(ctx, o.user, o.password)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		ans, err := owner.do(req)
		if err != nil {
			st.transport++
			st.firstErr = cmp(st.firstErr, err)
			continue
		}
		took := time.Since(start)
		st.latencies = append(st.latencies, took)
		st.statuses[ans.status]++
		if ans.status == http.StatusOK && took <= rightLoginBound {
			inTime++
		}
	}
	stop()
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := mergeStats("flood", time.Since(t0), []workerStats{st})
	// What was sent, but for the requests cut off when the flood stopped.
	total := 0
	for _, c := range flood {
		total += c
	}
	fmt.Fprintf(log, "flood: %d clients from %d addresses sent %d wrong passwords: 401×%d 429×%d 503×%d no-answer×%d\n",
		o.bounds.clients, o.sources, total, flood[401], flood[429], flood[503], flood[0])
	if floodErr != nil {
		fmt.Fprintf(log, "flood: first request without an answer: %v\n", floodErr)
	}
	fmt.Fprintf(log, "flood: the user's right logins from its address: %d of %d answered 200 within %s; p99 %s\n",
		inTime, r.answered()+r.transport, rightLoginBound, fmtDuration(r.percentile(0.99)))
	return r, nil
}
