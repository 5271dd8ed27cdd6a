// Package clientaddr names the client of an HTTP request as the
// per-client limit counts it: the connection's peer, or, when the peer is
// a trusted proxy, the nearest untrusted address in X-Forwarded-For. IPv6
// clients are grouped by /64, the block a single host usually holds.
package clientaddr

import (
	"net/http"
	"net/netip"
	"strings"
)

// Peer is the address of a connection's peer whose RemoteAddr is remote;
// the unspecified IPv6 address when there is none, as for a request
// served without a connection.
func Peer(remote string) netip.Addr {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return netip.IPv6Unspecified()
	}
	return ap.Addr().Unmap()
}

// Forwarded is the client of a request from peer: peer itself, unless it
// is a trusted proxy that named the client in X-Forwarded-For. Then the
// hops are read from the right, the one the proxy added first, and the
// first that is not trusted is the client; hops to its left were written
// by the client and are not believed. A hop may carry a port
// ("192.0.2.1:5678", "[2001:db8::1]:443"). A hop that is no address at
// all ("unknown", an obfuscated name) gives the invalid address: such
// clients share one bucket, apart from the proxy's own. IPv6 clients are
// grouped by /64.
func Forwarded(r *http.Request, peer netip.Addr, trusted []netip.Prefix) netip.Addr {
	addr := peer
	if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 && Trusted(trusted, peer) {
		hops := strings.Split(strings.Join(xff, ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			hop, ok := parseHop(hops[i])
			if !ok {
				return netip.Addr{}
			}
			addr = hop
			if !Trusted(trusted, addr) {
				break
			}
		}
	}
	if addr.Is6() {
		addr = netip.PrefixFrom(addr, 64).Masked().Addr()
	}
	return addr
}

// parseHop reads one X-Forwarded-For entry: an address, with or without a
// port, IPv6 with or without brackets.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

// Key is addr as attempts at an account are counted: an IPv4 address, or
// an IPv6 address as the /64 it starts, the block a single host usually
// holds (its caller masks it, as [Forwarded] does); "" for the invalid
// address.
func Key(addr netip.Addr) string {
	switch {
	case !addr.IsValid():
		return ""
	case addr.Is6():
		return netip.PrefixFrom(addr, 64).String()
	}
	return addr.String()
}

// Trusted reports whether a is in one of the trusted prefixes.
func Trusted(trusted []netip.Prefix, a netip.Addr) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
