// Package bearer finds the credential of a request's Authorization header
// in the Bearer scheme (RFC 6750, section 2.1), as every request behind
// nmauth's bearer check does before the credential is checked: the
// scheme matched in any case, never by splitting the header on a space,
// and a credential of visible ASCII read eight bytes at a time. It knows
// nothing of tokens or the Authenticator; its caller says what a missing
// credential is answered.
package bearer

import (
	"net/http"
	"strings"
)

// MaxLen bounds a credential; nmauth's tokens are far shorter.
const MaxLen = 4096

// Credential finds the credential in the Authorization header of h, and
// reports whether there is one. There must be exactly one such header, of
// the form "Bearer <credential>" with the scheme in any case and any
// number of spaces after it, and one credential of at most MaxLen bytes of
// visible ASCII without spaces.
func Credential(h http.Header) (string, bool) {
	v := h["Authorization"]
	if len(v) != 1 {
		return "", false
	}
	const scheme = "bearer "
	s := v[0]
	if len(s) <= len(scheme) || !strings.EqualFold(s[:len(scheme)], scheme) {
		return "", false
	}
	cred := strings.TrimLeft(s[len(scheme):], " ")
	if cred == "" || len(cred) > MaxLen {
		return "", false
	}
	if !visibleASCII(cred) {
		return "", false
	}
	return cred, true
}

// visibleASCII reports whether every byte of s is visible ASCII, '!'
// through '~'. Every request behind the bearer check pays for it, so it
// reads eight bytes at a time, 32 between two tests (see outOfRange).
func visibleASCII(s string) bool {
	const tops = 0x8080808080808080
	var out uint64
	for ; len(s) >= 32; s = s[32:] {
		out |= outOfRange(word(s)) | outOfRange(word(s[8:])) | outOfRange(word(s[16:])) | outOfRange(word(s[24:]))
	}
	for ; len(s) >= 8; s = s[8:] {
		out |= outOfRange(word(s))
	}
	if out&tops != 0 {
		return false
	}
	for i := range len(s) {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// outOfRange has the top bit of each byte of w set that is not visible
// ASCII; the other bits are noise. A byte below '!' borrows into its top
// bit when '!' is taken from it, one above '~' has its top bit set or
// gets it when one is added. A borrow or carry crosses into the next byte
// only from a byte that is itself out of range, so any top bit set means
// some byte is out of range.
func outOfRange(w uint64) uint64 {
	const ones = 0x0101010101010101
	return (w-'!'*ones)&^w | w | (w + ones)
}

// word is the first eight bytes of s, little-endian, in one load.
func word(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}
