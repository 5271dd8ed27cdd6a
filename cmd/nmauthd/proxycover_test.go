package main

import (
	"strings"
	"testing"
)

// TestTrustedProxiesCoveringEverything: prefixes that together cover
// every IPv4 or every IPv6 address are refused, from the flags and from
// NMAUTH_TRUSTED_PROXIES, and sets that leave an address out are not.
func TestTrustedProxiesCoveringEverything(t *testing.T) {
	for _, tc := range []struct {
		proxies []string
		family  string // the family covered, or "" when the set is fine
	}{
		{[]string{"0.0.0.0/1", "128.0.0.0/1"}, "IPv4"},
		{[]string{"128.0.0.0/1", "10.0.0.0/8", "0.0.0.0/1"}, "IPv4"},
		{[]string{"0.0.0.0/2", "64.0.0.0/2", "128.0.0.0/2", "192.0.0.0/3", "224.0.0.0/4", "240.0.0.0/4"}, "IPv4"},
		{[]string{"0.0.0.0/1", "128.0.0.0/2", "192.0.0.0/2", "::1"}, "IPv4"},
		{[]string{"::/1", "8000::/1"}, "IPv6"},
		{[]string{"::/2", "4000::/2", "8000::/1", "10.0.0.0/8"}, "IPv6"},
		{[]string{"0.0.0.0/1", "128.0.0.0/2", "192.0.0.0/3", "224.0.0.0/4", "240.0.0.0/5", "248.0.0.0/6",
			"252.0.0.0/7", "254.0.0.0/8", "255.0.0.0/9", "255.128.0.0/9"}, "IPv4"},
		// One address short of everything is left out, and so it is allowed.
		{[]string{"0.0.0.0/1", "128.0.0.0/2", "192.0.0.0/3", "224.0.0.0/4", "240.0.0.0/5", "248.0.0.0/6",
			"252.0.0.0/7", "254.0.0.0/8", "255.0.0.0/9", "255.128.0.0/10"}, ""},
		{[]string{"0.0.0.0/1", "192.0.0.0/2"}, ""},
		{[]string{"0.0.0.0/1", "::/1"}, ""},
		{[]string{"128.0.0.0/1", "::ffff:0.0.0.0/97"}, ""},
		{[]string{"10.0.0.0/8", "10.1.0.0/16", "192.168.0.0/16"}, ""},
	} {
		var args []string
		for _, p := range tc.proxies {
			args = append(args, "--trusted-proxy", p)
		}
		o, _, err := parseArgs(append([]string{"serve"}, args...))
		if err != nil {
			t.Fatalf("%v: %v", tc.proxies, err)
		}
		_, flagErr := trustedProxies(o, func(string) string { return "" })
		_, envErr := trustedProxies(&options{}, func(name string) string {
			if name == envTrustedProxies {
				return strings.Join(tc.proxies, ",")
			}
			return ""
		})
		for source, err := range map[string]error{"--trusted-proxy": flagErr, envTrustedProxies: envErr} {
			switch {
			case tc.family == "" && err != nil:
				t.Errorf("%s %v: refused: %v", source, tc.proxies, err)
			case tc.family != "" && err == nil:
				t.Errorf("%s %v: accepted, though it trusts every %s address", source, tc.proxies, tc.family)
			case tc.family != "" && !(strings.Contains(err.Error(), source) && strings.Contains(err.Error(), "every "+tc.family+" address")):
				t.Errorf("%s %v: %v; want the source and the family named", source, tc.proxies, err)
			}
		}
	}
}
