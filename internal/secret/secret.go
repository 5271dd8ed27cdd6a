// Package secret prepares the secret a login presents and classifies it,
// once, at the door: a machine secret, which a program drew at random and
// which a keyed digest keeps, or a person's password, which a slow hash
// keeps. The login carries the [Presented] value down, so that nothing
// below asks either question of the same secret again. It also holds the
// reading of root secrets from text ([ParseRoot], [Weakness]). It knows nothing of
// accounts, stores or hashes.
package secret

import (
	"errors"
	"sync/atomic"
	"unicode/utf8"

	"golang.org/x/text/secure/precis"
)

// MaxLen is the longest a prepared password may be, in bytes; a longer
// secret is never a machine secret either.
const MaxLen = 1024

// Presented is a secret as a login presents it, prepared and classified.
type Presented struct {
	// Text is the secret prepared by the PRECIS OpaqueString profile.
	Text string
	// Machine is true for a machine secret (see [IsMachine]); always
	// false for a secret that may only be a person's password.
	Machine bool
}

// The reasons a password cannot be prepared. The caller wraps them in its
// own error; their text never contains the password.
var (
	ErrEmpty     = errors.New("empty; a password is required")
	ErrNotUTF8   = errors.New("not valid UTF-8")
	ErrForbidden = errors.New("it holds a character no password may hold, such as a control character (PRECIS OpaqueString)")
)

// observer, when set, is called once for each secret Prepare classifies.
var observer atomic.Pointer[func()]

// Observe has f called once for each secret [Prepare] classifies, until
// the function it returns is called; tests count classifications with it.
func Observe(f func()) (stop func()) {
	observer.Store(&f)
	return func() { observer.Store(nil) }
}

// Prepare prepares raw, as [PreparePassword] does, and, when machine is
// true (a host's secret may be a machine secret, a user's never is),
// classifies it. A secret that cannot be prepared comes back as it was
// presented, classified as a password, with the error: the caller still
// spends a login's work on it, so that the answer does not tell.
func Prepare(raw string, machine bool) (Presented, error) {
	if f := observer.Load(); f != nil {
		(*f)()
	}
	text, err := PreparePassword(raw)
	if err != nil {
		return Presented{Text: raw}, err
	}
	return Presented{Text: text, Machine: machine && IsMachine(text)}, nil
}

// PreparePassword applies the PRECIS OpaqueString profile (RFC 8265): the
// same password typed on another keyboard, with a non-ASCII space or in
// another Unicode normal form, prepares to the same string. Its error is
// one of ErrEmpty, ErrNotUTF8 and ErrForbidden.
func PreparePassword(password string) (string, error) {
	if password == "" {
		return "", ErrEmpty
	}
	if PrintableASCII(password) {
		// OpaqueString keeps every printable ASCII character as it is
		// (TestPreparePasswordPrintableASCII, at the root), and a machine's password is one on
		// every login: the profile's work is spared.
		return password, nil
	}
	// The PRECIS package turns each invalid byte into U+FFFD, which would
	// make distinct byte strings the same password.
	if !utf8.ValidString(password) {
		return "", ErrNotUTF8
	}
	p, err := precis.OpaqueString.String(password)
	if err != nil {
		return "", ErrForbidden
	}
	return p, nil
}

// PrintableASCII reports whether b is made of printable ASCII characters
// (space to tilde) only.
func PrintableASCII[T string | []byte](b T) bool {
	for i := 0; i < len(b); i++ {
		if b[i] < ' ' || b[i] > '~' {
			return false
		}
	}
	return true
}
