package clientaddr

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// FuzzForwardedClient checks the reading of X-Forwarded-For: a peer that
// is not a trusted proxy is the client whatever the header says, and
// behind a trusted one the client is no address at all or one of the
// header's hops.
func FuzzForwardedClient(f *testing.F) {
	for _, s := range []string{"203.0.113.1", "198.51.100.7, 203.0.113.1", "10.0.0.2, 10.0.0.3", "[2001:db8::1]:443",
		"unknown", "", " , ,", "192.0.2.1:5678,10.0.0.9", "::ffff:10.0.0.1", "fe80::1%eth0"} {
		f.Add(s)
	}
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	f.Fuzz(func(t *testing.T, xff string) {
		r := &http.Request{Header: http.Header{"X-Forwarded-For": {xff}}}
		untrusted := netip.MustParseAddr("192.0.2.1")
		if got := Forwarded(r, untrusted, trusted); got != untrusted {
			t.Fatalf("an untrusted peer became %v", got)
		}
		got := Forwarded(r, netip.MustParseAddr("10.0.0.1"), trusted)
		if !got.IsValid() {
			return
		}
		for _, hop := range strings.Split(xff, ",") {
			a, ok := parseHop(hop)
			if a.Is6() {
				a = netip.PrefixFrom(a, 64).Masked().Addr()
			}
			if ok && a == got {
				return
			}
		}
		t.Fatalf("X-Forwarded-For %q gave %v, none of its hops", xff, got)
	})
}

func TestPeer(t *testing.T) {
	for remote, want := range map[string]netip.Addr{
		"203.0.113.7:5678":      netip.MustParseAddr("203.0.113.7"),
		"[::ffff:10.0.0.1]:443": netip.MustParseAddr("10.0.0.1"),
		"[2001:db8::1]:443":     netip.MustParseAddr("2001:db8::1"),
		"":                      netip.IPv6Unspecified(),
		"pipe":                  netip.IPv6Unspecified(),
	} {
		if got := Peer(remote); got != want {
			t.Errorf("Peer(%q) = %v, want %v", remote, got, want)
		}
	}
}

func TestKey(t *testing.T) {
	for addr, want := range map[netip.Addr]string{
		{}:                                 "",
		netip.MustParseAddr("192.0.2.1"):   "192.0.2.1",
		netip.MustParseAddr("2001:db8::1"): "2001:db8::1/64",
	} {
		if got := Key(addr); got != want {
			t.Errorf("Key(%v) = %q, want %q", addr, got, want)
		}
	}
}
