package tokencache

import (
	"math"
	"unsafe"
)

// Meta is the layout of a principal the cache keeps compact, in one word:
// the token's expiry in Unix seconds (high half), and in the low half its
// kind (an index the caller gives), two flags, and the lengths of its
// name, network and token id (LenBits each), whose bytes are kept one
// after the other elsewhere. With Ext set, the principal is kept whole by
// the caller, and the expiry is its token's rounded up to a second.
type Meta uint64

const (
	metaKind       = 3
	metaTOTP       = 1 << 2
	metaGeneration = 1 << 3
	metaExt        = 1 << 4
	metaNameShift  = 5
	// LenBits is the bits of each length.
	LenBits = 9
	// LenMax is the longest name, network or token id a Meta describes.
	LenMax = 1<<LenBits - 1
)

// PackMeta returns the Meta of a compact principal of kind (0
// through 3) whose token expires at expires (0 through math.MaxUint32),
// whose strings have these lengths (LenMax at most), and with the flags
// totp and generation, which say whether the principal passed a second
// factor and whether its token carries a generation.
func PackMeta(kind int, expires int64, name, network, id int, totp, generation bool) Meta {
	m := uint64(expires)<<32 | uint64(kind) |
		uint64(name)<<metaNameShift | uint64(network)<<(metaNameShift+LenBits) | uint64(id)<<(metaNameShift+2*LenBits)
	if totp {
		m |= metaTOTP
	}
	if generation {
		m |= metaGeneration
	}
	return Meta(m)
}

// ExtMeta returns the Meta of a principal kept whole whose token expires
// at expires, in Unix seconds, clamped to what a Meta holds.
func ExtMeta(expires int64) Meta {
	return Meta(uint64(min(max(expires, 0), math.MaxUint32))<<32 | metaExt)
}

// Ext reports whether the principal is kept whole.
func (m Meta) Ext() bool { return m&metaExt != 0 }

// Kind returns the kind a compact principal was packed with.
func (m Meta) Kind() int { return int(m & metaKind) }

// TOTP reports the flag totp of a compact principal.
func (m Meta) TOTP() bool { return m&metaTOTP != 0 }

// Generation reports the flag generation of a compact principal.
func (m Meta) Generation() bool { return m&metaGeneration != 0 }

// Expires returns the token's expiry in Unix seconds.
func (m Meta) Expires() int64 { return int64(m >> 32) }

// Strings returns a compact principal's name, network and token id, one
// after the other from ref, and the ends of the first two.
func (m Meta) Strings(ref *byte) (n, e int, strs string) {
	n = int(m >> metaNameShift & LenMax)
	e = n + int(m>>(metaNameShift+LenBits)&LenMax)
	return n, e, unsafe.String(ref, e+int(m>>(metaNameShift+2*LenBits)&LenMax))
}
