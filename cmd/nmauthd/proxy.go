package main

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// envTrustedProxies names the trusted proxies when no --trusted-proxy is
// given: addresses or CIDR prefixes, separated by commas or spaces.
const envTrustedProxies = "NMAUTH_TRUSTED_PROXIES"

// prefixList is the --trusted-proxy flag, which may be given more than
// once.
type prefixList []netip.Prefix

func (l *prefixList) String() string {
	s := make([]string, len(*l))
	for i, p := range *l {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

func (l *prefixList) Set(v string) error {
	p, err := parseTrustedProxy(v)
	if err != nil {
		return err
	}
	*l = append(*l, p)
	return nil
}

// parseTrustedProxy reads a CIDR prefix ("10.0.0.0/8") or one address
// ("10.0.0.5", a prefix of its full length). A prefix of length 0 is
// refused: trusting every address would let any client name its own
// address in X-Forwarded-For and escape the per-client limit.
func parseTrustedProxy(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		a, aerr := netip.ParseAddr(s)
		if aerr != nil {
			return netip.Prefix{}, fmt.Errorf("%q is neither an address nor a CIDR prefix", s)
		}
		p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
	}
	if p.Bits() == 0 {
		return netip.Prefix{}, errors.New("a prefix of length 0 would trust every address, so any client could choose its own")
	}
	return p.Masked(), nil
}

// trustedProxies returns the --trusted-proxy prefixes, or without any
// those of NMAUTH_TRUSTED_PROXIES. Prefixes that together cover every
// IPv4 or every IPv6 address are refused, as a prefix of length 0 is.
func trustedProxies(o *options, getenv func(string) string) ([]netip.Prefix, error) {
	if len(o.trustedProxies) > 0 {
		if err := checkNotEverything(o.trustedProxies); err != nil {
			return nil, fmt.Errorf("--trusted-proxy: %w", err)
		}
		return o.trustedProxies, nil
	}
	var l prefixList
	for _, s := range strings.FieldsFunc(getenv(envTrustedProxies), func(r rune) bool { return r == ',' || r == ' ' }) {
		if err := l.Set(s); err != nil {
			return nil, fmt.Errorf("%s: %w", envTrustedProxies, err)
		}
	}
	if err := checkNotEverything(l); err != nil {
		return nil, fmt.Errorf("%s: %w", envTrustedProxies, err)
	}
	return l, nil
}
