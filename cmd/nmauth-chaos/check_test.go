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
