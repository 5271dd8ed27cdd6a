package main

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// answerLimit is the longest an answer may take: the store deadline of
// 3 s and a bound of 2 s for the rest of the request on a loaded machine.
// A login waits for its turn (a hashing slot, or the host-login gate)
// before its own deadline starts; behind turns held by logins in a paused
// store, that wait is one store deadline more, so a login's bound is
// loginAnswerLimit.
const (
	answerLimit      = 5 * time.Second
	loginAnswerLimit = answerLimit + 3*time.Second
)

// limitOf is the longest op's answer may take.
func limitOf(o op) time.Duration {
	if o == opUserLogin || o == opHostLogin || o == opHostRevokeProbe {
		return loginAnswerLimit
	}
	return answerLimit
}

// report is the outcome of a run.
type report struct {
	Seed        uint64
	Requests    int
	ByOp        map[op]map[int]int // op → status → count (0: no answer)
	Faults      []fault
	Revocations map[string]int
	// Counted is how many wrong attempts on the target hosts were
	// answered 401, Stored how many failures the database holds for them.
	Counted, Stored int
	Violations      []string
}

// check tests every invariant against the records, the stored attempt
// counts of the target hosts, and the replicas' logs.
func check(recs []record, failures map[string]int, faults []fault, replicas []*replica) []string {
	var v []string
	add := func(format string, args ...any) {
		if len(v) < 200 {
			v = append(v, fmt.Sprintf(format, args...))
		}
	}
	accepted := map[string]int{}
	counted := map[string]int{}
	unsure := map[string]int{}
	errors500 := map[int]int{}
	for _, r := range recs {
		at := r.At.Format("15:04:05.000")
		switch {
		case r.Status == 401 && r.Right && r.Op != opLogout:
			add("%s: %s of %s on replica %d: a right credential answered 401", at, r.Op, r.Account, r.Replica)
		case r.Status >= 200 && r.Status < 300 && !r.Right:
			add("%s: %s of %s on replica %d: a wrong or revoked credential answered %d", at, r.Op, r.Account, r.Replica, r.Status)
		case (r.Status == 503 || r.Status == 429) && r.RetryAfter == "":
			add("%s: %s on replica %d: %d without Retry-After", at, r.Op, r.Replica, r.Status)
		case r.Status == 500:
			errors500[r.Replica]++
		case r.Status != 0 && !expected(r.Status):
			add("%s: %s of %s on replica %d: unexpected status %d", at, r.Op, r.Account, r.Replica, r.Status)
		}
		if limit := limitOf(r.Op); r.Status != 0 && r.Took > limit {
			add("%s: %s of %s on replica %d answered %d after %s, past %s", at, r.Op, r.Account, r.Replica, r.Status, r.Took.Round(time.Millisecond), limit)
		}
		if r.Op == opVerifyTOTP && r.Status == 200 {
			accepted[fmt.Sprintf("%s at step %d", r.Account, r.Step)]++
		}
		if r.Op == opHostLogin && strings.HasPrefix(r.Account, targetPrefix) {
			switch {
			case r.Status == 401:
				counted[r.Account]++
			case r.Status >= 500 || (r.Status == 0 && r.Err != "replica down"):
				unsure[r.Account]++
			}
		}
	}
	for key, n := range accepted {
		if n > 1 {
			add("TOTP code of %s accepted %d times", key, n)
		}
	}
	for id, stored := range failures {
		if stored < counted[id] || stored > counted[id]+unsure[id] {
			add("host %s: %d failures stored, %d wrong attempts answered 401 and %d without a sure answer", id, stored, counted[id], unsure[id])
		}
	}
	for _, r := range replicas {
		if errors500[r.id] > 0 && r.errorLines() == 0 {
			add("replica %d answered 500 %d times and logged no error", r.id, errors500[r.id])
		}
	}
	for _, ft := range faults {
		if ft.Recovered < 0 {
			add("%s at %s: service not back on every replica within %s", ft.Kind, ft.Began.Format("15:04:05"), recoveryLimit)
		}
	}
	return v
}

// expected are the statuses a request of the load may get besides 500.
func expected(status int) bool {
	switch status {
	case 200, 401, 429, 503:
		return true
	}
	return false
}

func (r *report) tally(recs []record, failures map[string]int) {
	r.Requests = len(recs)
	for _, n := range failures {
		r.Stored += n
	}
	r.ByOp = map[op]map[int]int{}
	for _, rec := range recs {
		if r.ByOp[rec.Op] == nil {
			r.ByOp[rec.Op] = map[int]int{}
		}
		r.ByOp[rec.Op][rec.Status]++
		if rec.Op == opHostLogin && rec.Status == 401 && strings.HasPrefix(rec.Account, targetPrefix) {
			r.Counted++
		}
	}
}

// text writes the report for people, in Markdown.
func (r *report) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %d requests, %d faults, %d violations\n\n", r.Seed, r.Requests, len(r.Faults), len(r.Violations))
	b.WriteString("| request | answers by status (0: no answer) |\n|---|---|\n")
	ops := make([]string, 0, len(r.ByOp))
	for o := range r.ByOp {
		ops = append(ops, string(o))
	}
	sort.Strings(ops)
	for _, o := range ops {
		var parts []string
		statuses := make([]int, 0)
		for st := range r.ByOp[op(o)] {
			statuses = append(statuses, st)
		}
		sort.Ints(statuses)
		for _, st := range statuses {
			parts = append(parts, fmt.Sprintf("%d: %d", st, r.ByOp[op(o)][st]))
		}
		fmt.Fprintf(&b, "| %s | %s |\n", o, strings.Join(parts, ", "))
	}
	b.WriteString("\n| fault | took | full service after |\n|---|---|---|\n")
	for _, ft := range r.Faults {
		rec := "not within " + recoveryLimit.String()
		if ft.Recovered >= 0 {
			rec = ft.Recovered.Round(10 * time.Millisecond).String()
		}
		kind := ft.Kind
		if ft.Replica >= 0 {
			kind += fmt.Sprintf(" (replica %d)", ft.Replica)
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", kind, ft.Ended.Sub(ft.Began).Round(10*time.Millisecond), rec)
	}
	fmt.Fprintf(&b, "\nrevocations checked on every replica: %v\n", r.Revocations)
	fmt.Fprintf(&b, "wrong attempts on the target hosts answered 401: %d; failures stored for them: %d\n", r.Counted, r.Stored)
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "VIOLATION: %s\n", v)
	}
	return b.String()
}
