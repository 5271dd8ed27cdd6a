package nmauth

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// nthAddr is the n-th of a run of distinct IPv4 addresses.
func nthAddr(n int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, byte(n >> 16), byte(n >> 8), byte(n)})
}

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
		if got := forwardedClient(r, untrusted, trusted); got != untrusted {
			t.Fatalf("an untrusted peer became %v", got)
		}
		got := forwardedClient(r, netip.MustParseAddr("10.0.0.1"), trusted)
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
