package main

import (
	"strings"
	"testing"
	"time"
)

// TestCheckAnswerBounds checks the bound on how long an answer may take:
// a login, which may wait behind turns held in a paused store before its
// own store deadline starts, gets 8 s; every other request 5 s.
func TestCheckAnswerBounds(t *testing.T) {
	at := time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		op        op
		took      time.Duration
		violation bool
	}{
		{opUserLogin, 5600 * time.Millisecond, false},
		{opHostLogin, 7900 * time.Millisecond, false},
		{opUserLogin, 8100 * time.Millisecond, true},
		{opHostLogin, 9 * time.Second, true},
		{opWhoami, 4900 * time.Millisecond, false},
		{opWhoami, 5100 * time.Millisecond, true},
	} {
		rec := record{At: at, Op: tc.op, Account: "acct", Right: true, Status: 200, Took: tc.took}
		v := check([]record{rec}, map[string]int{}, nil, nil)
		got := false
		for _, line := range v {
			if strings.Contains(line, "answered 200 after") {
				got = true
			}
		}
		if got != tc.violation {
			t.Errorf("%s answered after %s: violation %v, want %v (%q)", tc.op, tc.took, got, tc.violation, v)
		}
	}
}

// TestCheckHostProbe: a disabled host's right secret answered 200 by a
// replica after the bound is a violation; 401, or 503 from a replica in a
// fault, is not.
func TestCheckHostProbe(t *testing.T) {
	at := time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)
	for status, violation := range map[int]bool{200: true, 401: false, 503: false} {
		rec := record{At: at, Op: opHostRevokeProbe, Account: "churn-host after disable", Status: status, RetryAfter: "1", Took: time.Millisecond}
		v := check([]record{rec}, map[string]int{}, nil, nil)
		if got := len(v) > 0; got != violation {
			t.Errorf("probe answered %d: violations %q, want any: %v", status, v, violation)
		}
	}
}
