package tokencache

import (
	"encoding/binary"
	"sync/atomic"
	"time"
	"unsafe"
)

// Entry is what the cache keeps of a token that verified: its principal,
// the token's signature, and A, the account whose standing decides it.
//
// A hit must bring the whole of the token's signature, compared in
// constant time: a JWT's HMAC-SHA256 (32 bytes), an access token's check
// (the first 16 bytes of the HMAC-SHA256 of its id and secret). So a
// token that shares the key of a cached one (one chance in 2^64 for a
// given pair, under a seed no one outside the process knows) but differs
// in its header, claims, id or secret is no hit either: it would need the
// very MAC of another message, which without the root secret is a guess
// of 128 bits at least. What two tokens with the same MAC can differ in
// is the spare low bits of the signature's last character, which the
// uncached check ignores as well. The entry keeps the signature and not
// the token: neither a signature alone nor the principal is a credential,
// and the two together give back no token (a JWT's header and other
// claims, an access token's secret, are not kept).
type Entry[A any] struct {
	Sig [32]byte
	Principal
	Account *A
}

// Principal is a principal as the cache keeps it. A user, host or node
// token's is compact: its three strings in one, its issue time in Unix
// nanoseconds and its expiry in Unix seconds (a JWT's is whole seconds),
// the rest in a few bits. Any other (an access token's, or one whose
// fields would not come back the same) the caller keeps whole, and the
// Principal holds it by its address.
type Principal struct {
	// issued is when the token was issued, in Unix nanoseconds.
	issued     int64
	generation uint64
	// meta is the token's expiry and the layout.
	meta Meta
	// ref is the principal's name, network and token id, one after the
	// other, or the caller's whole principal when meta.Ext() is set.
	ref *byte
}

// Compact returns the compact Principal of a token of kind (0 through 3)
// whose fields are these, and false when one of them does not fit: a
// string longer than LenMax or an expiry out of range. The caller checks
// that the fields come back the same.
func Compact(kind int, name, network, id string, issued, expires time.Time, totp bool, gen uint64, hasGen bool) (Principal, bool) {
	exp := expires.Unix()
	if len(name) > LenMax || len(network) > LenMax || len(id) > LenMax || exp < 0 || exp > 1<<32-1 {
		return Principal{}, false
	}
	return Principal{
		issued:     issued.UnixNano(),
		generation: gen,
		meta:       PackMeta(kind, exp, len(name), len(network), len(id), totp, hasGen),
		ref:        unsafe.StringData(name + network + id),
	}, true
}

// Whole returns the Principal that holds whole, the caller's, whose token
// expires at expires.
func Whole[P any](whole *P, expires time.Time) Principal {
	exp := expires.Unix()
	if expires.Nanosecond() > 0 {
		exp++
	}
	return Principal{meta: ExtMeta(exp), ref: (*byte)(unsafe.Pointer(whole))}
}

// WholeOf returns the caller's whole principal that p holds, nil when p
// is compact. P is the type given to Whole.
func WholeOf[P any](p *Principal) *P {
	if !p.meta.Ext() {
		return nil
	}
	return (*P)(unsafe.Pointer(p.ref))
}

// Kind returns the kind of a compact principal.
func (p *Principal) Kind() int { return p.meta.Kind() }

// Strings returns a compact principal's name, network and token id.
func (p *Principal) Strings() (name, network, id string) {
	n, m, strs := p.meta.Strings(p.ref)
	return strs[:n], strs[n:m], strs[m:]
}

// ID returns a compact principal's token id.
func (p *Principal) ID() string {
	_, m, strs := p.meta.Strings(p.ref)
	return strs[m:]
}

// IssuedAt returns when a compact principal's token was issued.
func (p *Principal) IssuedAt() time.Time { return time.Unix(0, p.issued) }

// ExpiresAt returns when the principal's token expires: for one kept
// whole, rounded up to a second.
func (p *Principal) ExpiresAt() time.Time { return time.Unix(p.meta.Expires(), 0) }

// TOTP reports whether a compact principal passed a second factor.
func (p *Principal) TOTP() bool { return p.meta.TOTP() }

// Generation returns a compact principal's account generation, and
// whether its token carries one.
func (p *Principal) Generation() (uint64, bool) { return p.generation, p.meta.Generation() }

// SlotEntry is an Entry as a slot holds it: every field is read and
// written atomically.
type SlotEntry[A any] struct {
	// sig is the token's signature, little-endian.
	sig [4]atomic.Uint64
	// The others are Principal's and Entry's.
	issued     atomic.Int64
	generation atomic.Uint64
	meta       atomic.Uint64
	ref        atomic.Pointer[byte]
	account    atomic.Pointer[A]
}

// Load reads the entry of s.
func (s *SlotEntry[A]) Load() (e Entry[A]) {
	for i := range s.sig {
		binary.LittleEndian.PutUint64(e.Sig[8*i:], s.sig[i].Load())
	}
	e.issued, e.generation, e.meta = s.issued.Load(), s.generation.Load(), Meta(s.meta.Load())
	e.ref, e.Account = s.ref.Load(), s.account.Load()
	return e
}

// Store writes e into s.
func (s *SlotEntry[A]) Store(e Entry[A]) {
	for i := range s.sig {
		s.sig[i].Store(binary.LittleEndian.Uint64(e.Sig[8*i:]))
	}
	s.issued.Store(e.issued)
	s.generation.Store(e.generation)
	s.meta.Store(uint64(e.meta))
	s.ref.Store(e.ref)
	s.account.Store(e.Account)
}

// Expired reports whether the token in s has expired at now.
func (s *SlotEntry[A]) Expired(now time.Time) bool {
	return Meta(s.meta.Load()).Expires() <= now.Unix()
}
