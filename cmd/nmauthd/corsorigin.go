package main

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// checkCORSOrigins refuses a --cors-origin that is not one exact origin,
// scheme://host[:port], as a browser sends it in its Origin header. A
// wildcard is refused: any page it matched could call the API with the
// bearer a user pasted into it.
func checkCORSOrigins(origins []string) error {
	for _, o := range origins {
		if err := checkCORSOrigin(o); err != nil {
			return fmt.Errorf("--cors-origin %q: %w", o, err)
		}
	}
	return nil
}

func checkCORSOrigin(s string) error {
	if strings.Contains(s, "*") {
		return fmt.Errorf("a wildcard would let every page it matches call the API from its visitors' browsers; " +
			"name each web UI's origin exactly, as scheme://host[:port]")
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Opaque != "" || u.Host == "" {
		return fmt.Errorf("not an origin: want scheme://host[:port], the scheme http or https")
	}
	if u.User != nil || u.Path != "" || u.RawQuery != "" || u.ForceQuery || strings.Contains(s, "#") {
		return fmt.Errorf("an origin is scheme://host[:port] alone, without user, path (not even /), query or fragment, " +
			"as the browser sends it")
	}
	if !validOriginHost(u.Hostname()) {
		return fmt.Errorf("%q is no host name or IP address", u.Hostname())
	}
	if port := u.Port(); port != "" || strings.HasSuffix(u.Host, ":") {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return fmt.Errorf("the port must be a number from 1 to 65535")
		}
		if (u.Scheme == "http" && n == 80) || (u.Scheme == "https" && n == 443) {
			return fmt.Errorf("a browser sends the origin without its scheme's default port %d, so it would never match; leave it out", n)
		}
	}
	return nil
}

// validOriginHost accepts a DNS name (letters, digits, hyphens and dots)
// or an IP address; url.Parse has taken an IPv6 address out of its
// brackets.
func validOriginHost(h string) bool {
	if h == "" || strings.HasPrefix(h, ".") || strings.HasSuffix(h, ".") || strings.Contains(h, "..") {
		return false
	}
	if strings.Contains(h, ":") {
		a, err := netip.ParseAddr(h)
		return err == nil && a.Is6() && a.Zone() == ""
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}
