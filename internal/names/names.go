// Package names prepares the names a request carries into the one form
// nmauth stores and compares them in: usernames by the PRECIS
// UsernameCaseMapped profile (RFC 8265), host ids as printable text with
// a UUID in lower case, MAC addresses in their canonical form. Each
// function reports whether its input is acceptable; the caller chooses
// the error.
package names

import (
	"net"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/secure/precis"
)

// Username applies the PRECIS UsernameCaseMapped profile, so that names
// differing only in case or width are one user. Names of more than 64
// bytes are refused.
func Username(name string) (string, bool) {
	p, err := precis.UsernameCaseMapped.String(name)
	if err != nil || p == "" || len(p) > 64 {
		return "", false
	}
	return p, true
}

// HostID accepts 1 to 128 printable characters without spaces, and writes
// a UUID in lower case, so that two spellings of one UUID are one host.
func HostID(id string) (string, bool) {
	if id == "" || len(id) > 128 || !utf8.ValidString(id) {
		return "", false
	}
	for _, r := range id {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return "", false
		}
	}
	if IsUUID(id) {
		id = strings.ToLower(id)
	}
	return id, true
}

// Network reports whether network is a well-formed network name: the same
// form as a host id.
func Network(network string) bool {
	_, ok := HostID(network)
	return ok
}

// IsUUID reports whether s is a UUID in its 8-4-4-4-12 hex form.
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'):
			return false
		}
	}
	return true
}

// MAC returns a MAC address in canonical form, or "" for "".
func MAC(mac string) (string, bool) {
	if mac == "" {
		return "", true
	}
	hw, err := net.ParseMAC(mac)
	if err != nil {
		return "", false
	}
	return hw.String(), true
}

// Safe bounds a name taken from a request before it reaches a log line or
// an event.
func Safe(s string) string {
	if len(s) > 64 || !utf8.ValidString(s) {
		return "(invalid)"
	}
	return s
}
