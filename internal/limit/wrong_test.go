package limit

import (
	"net/netip"
	"testing"
	"time"
)

// TestWrongCredentials checks the window in which wrong credentials may
// have put an address past its limit: none before a wrong one, open
// while an address that spent its burst on them must wait, for as long
// as it must, and closed, at one load again, once that has passed.
func TestWrongCredentials(t *testing.T) {
	now := start
	l := testLimiter(now)
	guesser := netip.MustParseAddr("198.51.100.7")
	other := netip.MustParseAddr("192.0.2.1")
	if l.WrongSeen() {
		t.Fatal("a new limiter has seen a wrong credential")
	}
	var wait time.Duration
	for range 21 {
		_, wait = l.Take(guesser, now)
		l.NoteWrong(now, wait)
	}
	if wait <= 0 {
		t.Fatal("the 21st attempt of a burst of 20 was allowed")
	}
	if !l.WrongSeen() {
		t.Fatal("wrong credentials past the burst are not seen")
	}
	if got := l.Throttled(guesser, now); got != wait {
		t.Errorf("the guesser is throttled for %v, want %v", got, wait)
	}
	if got := l.Throttled(other, now); got != 0 {
		t.Errorf("an address with no attempts is throttled for %v", got)
	}
	// The window lasts an interval past the wait of the refused attempt.
	if got := l.Throttled(guesser, now.Add(wait+time.Second-time.Nanosecond)); got != 0 || !l.WrongSeen() {
		t.Errorf("within the window: throttled %v, seen %v; want 0, true", got, l.WrongSeen())
	}
	if got := l.Throttled(guesser, now.Add(wait+time.Second)); got != 0 {
		t.Errorf("after the window the guesser is throttled for %v", got)
	}
	if l.WrongSeen() {
		t.Error("the window did not close once it had passed")
	}
}

// TestWrongCredentialsOff checks that a nil Limiter, the limit off,
// throttles nobody.
func TestWrongCredentialsOff(t *testing.T) {
	var l *Limiter
	if l.WrongSeen() {
		t.Error("a limit that is off has seen a wrong credential")
	}
	if got := l.Throttled(netip.MustParseAddr("192.0.2.1"), start); got != 0 {
		t.Errorf("a limit that is off throttles for %v", got)
	}
}

// TestNoteWrongKeepsLatest checks that an earlier wrong credential noted
// after a later one does not shorten the window.
func TestNoteWrongKeepsLatest(t *testing.T) {
	l := testLimiter(start)
	l.NoteWrong(start, time.Minute)
	l.NoteWrong(start, 0)
	if got := l.wrongUntil.Load(); got != start.Add(time.Minute+time.Second).UnixNano() {
		t.Errorf("window ends at %v, want a minute and an interval after start", time.Unix(0, got).UTC())
	}
}
