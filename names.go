package nmauth

import (
	"net"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/secure/precis"
)

// PrepareUsername applies the PRECIS UsernameCaseMapped profile, so that
// names differing only in case or width are one user. Names of more than 64
// bytes are refused.
func PrepareUsername(name string) (string, error) {
	p, err := precis.UsernameCaseMapped.String(name)
	if err != nil || p == "" || len(p) > 64 {
		return "", ErrInvalidUsername
	}
	return p, nil
}

// PrepareHostID returns a host id in the one form every method of the
// Authenticator stores and compares it in: 1 to 128 printable characters
// without spaces, else [ErrInvalidHost], with a UUID, the form netclient
// uses, written in lower case, so that two spellings of one UUID are one
// host. An application that keeps records of its own by host id, such as
// the networks a host is a member of for [Config.NodeMember], prepares the
// id with it before it stores one.
func PrepareHostID(id string) (string, error) {
	if id == "" || len(id) > 128 || !utf8.ValidString(id) {
		return "", ErrInvalidHost
	}
	for _, r := range id {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return "", ErrInvalidHost
		}
	}
	if isUUID(id) {
		id = strings.ToLower(id)
	}
	return id, nil
}

// isUUID reports whether s is a UUID in its 8-4-4-4-12 hex form.
func isUUID(s string) bool {
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

// prepareMAC returns a MAC address in canonical form, or "" for "".
func prepareMAC(mac string) (string, error) {
	if mac == "" {
		return "", nil
	}
	hw, err := net.ParseMAC(mac)
	if err != nil {
		return "", ErrInvalidHost
	}
	return hw.String(), nil
}

// validNetwork accepts 1 to 128 printable characters without spaces, the
// same form as a host id.
func validNetwork(network string) bool {
	_, err := PrepareHostID(network)
	return err == nil
}

// safeName bounds a name taken from a request before it reaches a log
// line or an event.
func safeName(s string) string {
	if len(s) > 64 || !utf8.ValidString(s) {
		return "(invalid)"
	}
	return s
}
