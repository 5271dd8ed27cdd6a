package nmauth

import "github.com/nmauth/nmauth/internal/names"

// PrepareUsername applies the PRECIS UsernameCaseMapped profile, so that
// names differing only in case or width are one user. Names of more than 64
// bytes are refused.
func PrepareUsername(name string) (string, error) {
	if p, ok := names.Username(name); ok {
		return p, nil
	}
	return "", ErrInvalidUsername
}

// PrepareHostID returns a host id in the one form every method of the
// Authenticator stores and compares it in: 1 to 128 printable characters
// without spaces, else [ErrInvalidHost], with a UUID, the form netclient
// uses, written in lower case, so that two spellings of one UUID are one
// host. An application that keeps records of its own by host id, such as
// the networks a host is a member of for [Config.NodeMember], prepares the
// id with it before it stores one.
func PrepareHostID(id string) (string, error) {
	if p, ok := names.HostID(id); ok {
		return p, nil
	}
	return "", ErrInvalidHost
}

// prepareMAC returns a MAC address in canonical form, or "" for "".
func prepareMAC(mac string) (string, error) {
	if m, ok := names.MAC(mac); ok {
		return m, nil
	}
	return "", ErrInvalidHost
}
