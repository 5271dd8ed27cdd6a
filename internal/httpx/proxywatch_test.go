package httpx

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/nmauth/nmauth/internal/limit"
)

func newLog() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, nil)), &buf
}

func TestForwarded(t *testing.T) {
	log, buf := newLog()
	var w ProxyWatch
	peer := netip.MustParseAddr("192.0.2.1")
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	w.Forwarded(log, http.Header{"Accept": {"*/*"}}, peer, now)
	if u, _ := w.Counts(); u != 0 || buf.Len() != 0 {
		t.Fatalf("a request without a forwarding header: count %d, log %q", u, buf)
	}
	for _, h := range []http.Header{
		{"X-Forwarded-For": {"198.51.100.7"}},
		{"Forwarded": {"for=198.51.100.7"}},
		{"X-Forwarded-For": {"198.51.100.8"}},
	} {
		w.Forwarded(log, h, peer, now)
	}
	if u, o := w.Counts(); u != 3 || o != 0 {
		t.Fatalf("Counts = %d, %d; want 3, 0", u, o)
	}
	if n := strings.Count(buf.String(), "level=WARN"); n != 1 || !strings.Contains(buf.String(), "peer=192.0.2.1") {
		t.Fatalf("%d lines in one minute, want 1 naming the peer: %s", n, buf)
	}
	w.Forwarded(log, http.Header{"Forwarded": {"for=x"}}, peer, now.Add(time.Minute))
	if n := strings.Count(buf.String(), "level=WARN"); n != 2 {
		t.Fatalf("%d lines after the next minute began, want 2", n)
	}
}

func TestAttemptOneAddress(t *testing.T) {
	log, buf := newLog()
	var w ProxyWatch
	var seen limit.MinuteCount
	addr := netip.MustParseAddr("192.0.2.9")
	ns := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC).UnixNano()
	for range OneAddressAttempts - 1 {
		w.Attempt(log, &seen, addr, ns)
	}
	if _, o := w.Counts(); o != 0 || buf.Len() != 0 {
		t.Fatalf("below %d attempts: %d minutes, log %q", OneAddressAttempts, o, buf)
	}
	w.Attempt(log, &seen, addr, ns)
	if _, o := w.Counts(); o != 1 || !strings.Contains(buf.String(), "client=192.0.2.9") {
		t.Fatalf("at %d attempts of one address: %d minutes, log %q", OneAddressAttempts, o, buf)
	}
	for range 3 * OneAddressAttempts {
		w.Attempt(log, &seen, addr, ns)
	}
	if _, o := w.Counts(); o != 1 || strings.Count(buf.String(), "level=WARN") != 1 {
		t.Fatalf("the same minute counted again: %d minutes, log %q", o, buf)
	}
}

func TestAttemptSpread(t *testing.T) {
	log, buf := newLog()
	var w ProxyWatch
	ns := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC).UnixNano()
	// Three addresses in turn: none makes more than half of the attempts.
	var seen [3]limit.MinuteCount
	addrs := []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("192.0.2.3")}
	for i := range 3 * 4 * OneAddressAttempts {
		w.Attempt(log, &seen[i%3], addrs[i%3], ns)
	}
	if _, o := w.Counts(); o != 0 || buf.Len() != 0 {
		t.Fatalf("attempts spread over three addresses: %d minutes, log %q", o, buf)
	}
}

func TestAttemptNoAddress(t *testing.T) {
	log, buf := newLog()
	var w ProxyWatch
	var seen limit.MinuteCount
	for range OneAddressAttempts {
		w.Attempt(log, &seen, netip.Addr{}, 0)
	}
	if !strings.Contains(buf.String(), "a trusted proxy named no address") {
		t.Fatalf("log %q does not say that no address was named", buf)
	}
}
