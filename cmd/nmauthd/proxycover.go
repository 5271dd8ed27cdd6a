package main

import (
	"fmt"
	"net/netip"
	"slices"
)

// checkNotEverything refuses trusted proxies that together cover every
// IPv4 or every IPv6 address, such as 0.0.0.0/1 with 128.0.0.0/1: like a
// prefix of length 0, they would let any client name its own address in
// X-Forwarded-For. The client addresses compared with them are unmapped,
// so each family is covered by prefixes of its own family only.
func checkNotEverything(prefixes []netip.Prefix) error {
	for _, family := range []struct {
		name  string
		first netip.Addr
	}{{"IPv4", netip.IPv4Unspecified()}, {"IPv6", netip.IPv6Unspecified()}} {
		var of []netip.Prefix
		for _, p := range prefixes {
			if p.Addr().Is4() == family.first.Is4() {
				of = append(of, p.Masked())
			}
		}
		if coversAll(of, family.first) {
			l := prefixList(prefixes)
			return fmt.Errorf("%s together trust every %s address, so any client could choose its own; "+
				"name the reverse proxies' own addresses", l.String(), family.name)
		}
	}
	return nil
}

// coversAll reports whether prefixes, all of first's family and masked,
// leave no address of that family out.
func coversAll(prefixes []netip.Prefix, first netip.Addr) bool {
	slices.SortFunc(prefixes, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	next := first // the lowest address not yet covered
	for _, p := range prefixes {
		if next.Less(p.Addr()) {
			return false // a gap before p
		}
		last := lastAddr(p)
		if last.Less(next) {
			continue // inside what is covered already
		}
		next = last.Next()
		if !next.IsValid() {
			return true // the family's last address is covered
		}
	}
	return false
}

// lastAddr is the highest address of the masked prefix p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().As16()
	bits := p.Bits()
	if p.Addr().Is4() {
		bits += 96
	}
	for i := bits; i < 128; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a := netip.AddrFrom16(b)
	if p.Addr().Is4() {
		a = a.Unmap()
	}
	return a
}
