package nmauth

import "net/netip"

// nthAddr is the n-th of a run of distinct IPv4 addresses.
func nthAddr(n int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, byte(n >> 16), byte(n >> 8), byte(n)})
}
