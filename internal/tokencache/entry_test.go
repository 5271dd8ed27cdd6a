package tokencache

import (
	"strings"
	"testing"
	"time"
)

// TestCompactRoundTrip: a compact principal gives back every field it was
// made with.
func TestCompactRoundTrip(t *testing.T) {
	issued, expires := time.Unix(1772366460, 123456789), time.Unix(1772370060, 0)
	p, ok := Compact(2, "host-1", "office", "jti-1", issued, expires, true, 7, true)
	if !ok || WholeOf[string](&p) != nil {
		t.Fatalf("not compact: %v", ok)
	}
	name, network, id := p.Strings()
	gen, hasGen := p.Generation()
	if p.Kind() != 2 || name != "host-1" || network != "office" || id != "jti-1" || p.ID() != "jti-1" ||
		!p.IssuedAt().Equal(issued) || !p.ExpiresAt().Equal(expires) || !p.TOTP() || gen != 7 || !hasGen {
		t.Errorf("compact principal reads back otherwise: %+v", p)
	}
}

// TestCompactRefusesWhatDoesNotFit: a string longer than LenMax or an
// expiry out of range leaves the principal to be kept whole.
func TestCompactRefusesWhatDoesNotFit(t *testing.T) {
	now, long := time.Unix(1772366460, 0), strings.Repeat("x", LenMax+1)
	for name, ok := range map[string]bool{
		"long name":    ok(Compact(0, long, "", "id", now, now, false, 0, false)),
		"long network": ok(Compact(0, "n", long, "id", now, now, false, 0, false)),
		"long id":      ok(Compact(0, "n", "", long, now, now, false, 0, false)),
		"before 1970":  ok(Compact(0, "n", "", "id", now, time.Unix(-1, 0), false, 0, false)),
		"after 2106":   ok(Compact(0, "n", "", "id", now, time.Unix(1<<32, 0), false, 0, false)),
	} {
		if ok {
			t.Errorf("%s: kept compact", name)
		}
	}
	if _, ok := Compact(0, strings.Repeat("x", LenMax), "", "id", now, time.Unix(1<<32-1, 0), false, 0, false); !ok {
		t.Error("the longest name and the last expiry are not kept compact")
	}
}

func ok(_ Principal, ok bool) bool { return ok }

// TestWhole: a principal kept whole gives back the caller's value, and
// its expiry rounded up to a second.
func TestWhole(t *testing.T) {
	whole := "whole"
	p := Whole(&whole, time.Unix(1772366460, 1))
	if got := WholeOf[string](&p); got != &whole {
		t.Fatalf("WholeOf = %v", got)
	}
	if p.ExpiresAt().Unix() != 1772366461 {
		t.Errorf("expiry %v, want rounded up", p.ExpiresAt())
	}
	if p = Whole(&whole, time.Time{}); p.ExpiresAt().Unix() != 0 {
		t.Errorf("zero expiry %v", p.ExpiresAt())
	}
}

// TestSlotEntry: an entry stored in a slot loads back the same, and
// expires with its principal.
func TestSlotEntry(t *testing.T) {
	account := 5
	p, _ := Compact(1, "alice", "", "jti", time.Unix(1772366460, 5), time.Unix(1772370060, 0), false, 3, true)
	e := Entry[int]{Principal: p, Account: &account}
	for i := range e.Sig {
		e.Sig[i] = byte(i + 1)
	}
	var s SlotEntry[int]
	s.Store(e)
	if got := s.Load(); got != e {
		t.Errorf("loaded %+v, stored %+v", got, e)
	}
	if s.Expired(time.Unix(1772370059, 0)) || !s.Expired(time.Unix(1772370060, 0)) {
		t.Error("the slot's expiry is not its principal's")
	}
}
