package nmauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"unicode/utf8"

	"github.com/nmauth/nmauth/internal/secret"
)

// wellKnownMasterKey is the master key Netmaker ships with. It is public
// knowledge, so it is refused unless insecure keys are allowed.
const wellKnownMasterKey = "secretkey"

// minMasterKeyLen is the fewest characters a master key may have. A random
// key of this length is far beyond guessing; anything shorter is likely a
// word someone picked.
const minMasterKeyLen = 32

// errEmptyMasterKey is not an [ErrInsecureMasterKey]: no setting makes an
// empty key acceptable, so it must not suggest that one would.
var errEmptyMasterKey = errors.New("nmauth: empty master key")

// MasterKey is the master key bearer credential. It keeps only the SHA-256
// digest of the key, so neither a memory dump nor a stray log line yields
// the key itself. Use it through the pointer [NewMasterKey] returns; the
// zero value matches nothing.
type MasterKey struct {
	// digest sits behind a pointer so that printing a copied MasterKey
	// value shows an address, not the digest.
	digest *[sha256.Size]byte
}

// NewMasterKey returns the [MasterKey] for key. An empty key is an error.
// Netmaker's well-known default key ("secretkey") or one shorter than 32
// characters is an error wrapping [ErrInsecureMasterKey], and a longer key
// that does not read as drawn at random, by the rule that makes a host's
// password a machine secret (at least 128 bits in one alphabet of random
// text, hex, base32, base62 or base64, without a repeated pattern, a run
// of the keyboard or common words), one wrapping [ErrWeakMasterKey], which
// wraps ErrInsecureMasterKey: a master key grants every right, and a
// guess at it is checked as fast as a machine secret's. With
// allowInsecure set, each is accepted and a warning goes to logger (nil
// means [slog.Default]). Neither the error nor the warning contains the
// key. `openssl rand -base64 32` makes a key that passes.
func NewMasterKey(key string, allowInsecure bool, logger *slog.Logger) (*MasterKey, error) {
	if key == "" {
		return nil, errEmptyMasterKey
	}
	if reason, weak := masterKeyWeakness(key); reason != "" {
		if !allowInsecure && weak {
			return nil, fmt.Errorf("%w (%s)", ErrWeakMasterKey, reason)
		}
		if !allowInsecure {
			return nil, fmt.Errorf("%w: %s", ErrInsecureMasterKey, reason)
		}
		if logger == nil {
			logger = slog.Default()
		}
		logger.Warn("nmauth: insecure master key allowed; do not run like this in production", slog.String("reason", reason))
	}
	d := sha256.Sum256([]byte(key))
	return &MasterKey{digest: &d}, nil
}

// masterKeyWeakness says why key is insecure, or returns "" if it is not,
// and whether it is only weak: long enough, but not random. Length counts
// characters so that a few multi-byte runes cannot pass for a long key.
func masterKeyWeakness(key string) (reason string, weak bool) {
	switch {
	case key == wellKnownMasterKey:
		return "it is the well-known default", false
	case utf8.RuneCountInString(key) < minMasterKeyLen:
		return fmt.Sprintf("it is shorter than %d characters", minMasterKeyLen), false
	case !secret.IsMachine(key):
		return "fewer than 128 bits by the rule of machine secrets: a pattern, words, " +
			"or characters outside hex, base32, base62 and base64", true
	}
	return "", false
}

// Check reports whether candidate is the master key. It compares digests
// of equal size in constant time, so neither the content nor the length
// of the key leaks through timing. A nil or zero MasterKey matches
// nothing.
func (k *MasterKey) Check(candidate string) bool {
	if k == nil || k.digest == nil {
		return false
	}
	d := digestString(candidate)
	return subtle.ConstantTimeCompare(d[:], k.digest[:]) == 1
}

// digestString returns SHA-256 of s without allocating: converting a long
// string to []byte would copy it to the heap on every request, so it is
// fed to the hash through a buffer on the stack instead.
func digestString(s string) [sha256.Size]byte {
	h := sha256.New()
	var buf [256]byte
	for len(s) > 0 {
		n := copy(buf[:], s)
		h.Write(buf[:n])
		s = s[n:]
	}
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}

// String returns a fixed placeholder so that the key never reaches output.
func (k *MasterKey) String() string { return "[REDACTED]" }

// GoString returns the same placeholder as [MasterKey.String] for %#v.
func (k *MasterKey) GoString() string { return "[REDACTED]" }

// LogValue implements [slog.LogValuer] with a fixed placeholder.
func (k *MasterKey) LogValue() slog.Value { return slog.StringValue("[REDACTED]") }
