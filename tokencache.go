package nmauth

import (
	"encoding/binary"
	"math"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/nmauth/nmauth/internal/tokencache"
)

// tokenCache remembers the principal of bearer tokens that verified, until
// they expire, so the check on every request costs a hash and a lookup
// rather than a parse (see internal/tokencache, which holds the table and
// its doorkeeper). Only tokens whose signature was verified are stored, on
// their second verification.
//
// A slot of its table holds all that a hit reads, in 88 bytes: the key,
// the signature and the principal's compact fields, its strings by their
// address (one allocation per token, which a hit returns without
// reading). A hit returns the fields of one write of the slot, whose
// signature, compared whole, is the token's.
type tokenCache struct {
	tokencache.Cache[tokenEntry, tokenSlotEntry, *tokenSlotEntry]
}

// tokenSlot is one token's place in the cache's table.
type tokenSlot = tokencache.Slot[tokenSlotEntry]

// tokenSlotEntry is a tokenEntry as a slot holds it: every field is read
// and written atomically.
type tokenSlotEntry struct {
	// sig is the token's signature (see tokenEntry), little-endian.
	sig [4]atomic.Uint64
	// The others are tokenEntry's.
	issued     atomic.Int64
	generation atomic.Uint64
	meta       atomic.Uint64
	ref        atomic.Pointer[byte]
	account    atomic.Pointer[accountRef[accountStatus]]
}

// Load reads the entry of s.
func (s *tokenSlotEntry) Load() (e tokenEntry) {
	for i := range s.sig {
		binary.LittleEndian.PutUint64(e.sig[8*i:], s.sig[i].Load())
	}
	e.issued, e.generation, e.meta = s.issued.Load(), s.generation.Load(), tokencache.Meta(s.meta.Load())
	e.ref, e.account = s.ref.Load(), s.account.Load()
	return e
}

// Store writes e into s.
func (s *tokenSlotEntry) Store(e tokenEntry) {
	for i := range s.sig {
		s.sig[i].Store(binary.LittleEndian.Uint64(e.sig[8*i:]))
	}
	s.issued.Store(e.issued)
	s.generation.Store(e.generation)
	s.meta.Store(uint64(e.meta))
	s.ref.Store(e.ref)
	s.account.Store(e.account)
}

// Expired reports whether the token in s has expired at now.
func (s *tokenSlotEntry) Expired(now time.Time) bool {
	return tokencache.Meta(s.meta.Load()).Expires() <= now.Unix()
}

// newTokenCache returns a cache of at most size tokens, or one that holds
// none when size is negative.
func newTokenCache(size int) *tokenCache {
	c := new(tokenCache)
	c.Init(size)
	return c
}

// get returns the token's key, for put, and its entry if the token is in
// the cache, else false. A disabled cache spends no hash. An entry is
// returned whatever its expiry; the caller checks that, by the same clock
// as an uncached token's.
func (c *tokenCache) get(token string) (uint64, tokenEntry, bool) {
	var e tokenEntry
	if !c.On() {
		return 0, e, false
	}
	return c.lookup(c.Key(token), token)
}

// lookup is get for the token of this key: an entry under the key is the
// token's only if it brings the token's signature. It reads the slot
// itself, with no call through the cache's type parameters.
func (c *tokenCache) lookup(key uint64, token string) (uint64, tokenEntry, bool) {
	if s, ver := c.Table().Find(key); s != nil {
		if e := s.Value().Load(); s.Unchanged(key, ver) {
			if sig, ok := tokenSignature(token); ok && tokencache.SameSignature(&e.sig, &sig) {
				c.Hit()
				return key, e, true
			}
		}
	}
	c.Miss()
	return key, tokenEntry{}, false
}

// put remembers a token that verified, with its principal and the places
// of its standing, until it expires, if the token verified once before
// lately; otherwise it notes the token in the doorkeeper only.
func (c *tokenCache) put(key uint64, token string, p *Principal, account, tokenRef *accountRef[accountStatus], now time.Time) {
	if !c.On() || !now.Before(p.ExpiresAt) || !c.Admit(key) {
		return
	}
	sig, ok := tokenSignature(token)
	if !ok {
		return
	}
	c.Put(key, newTokenEntry(&sig, p, account, tokenRef), now)
}

// tokenEntry is what the token cache keeps of a token that verified: its
// principal, the token's signature, and the account whose standing
// decides it. A user, host or node token's principal is kept compact: its
// three strings in one, its issue time in Unix nanoseconds and its expiry
// in Unix seconds (a JWT's is whole seconds), the rest in a few bits;
// any other (an access token's, or one whose fields would not come back
// the same) is kept whole in a tokenExt.
//
// A hit must bring the whole of the token's signature, compared in
// constant time: a JWT's HMAC-SHA256 (32 bytes), an access token's
// check (the first 16 bytes of the HMAC-SHA256 of its id and secret).
// So a token that shares the key of a cached one (one chance in 2^64 for
// a given pair, under a seed no one outside the process knows) but
// differs in its header, claims, id or secret is no hit either: it would
// need the very MAC of another message, which without the root secret is
// a guess of 128 bits at least. What two tokens with the same MAC can
// differ in is the spare low bits of the signature's last character,
// which the uncached check ignores as well. The entry keeps the signature
// and not the token: neither a signature alone nor the principal is a
// credential, and the two together give back no token (a JWT's header and
// other claims, an access token's secret, are not kept).
type tokenEntry struct {
	sig [32]byte
	compactPrincipal
	account *accountRef[accountStatus]
}

// compactPrincipal is a principal as the token cache keeps it (see
// tokenEntry). The bearer check reads the fields it needs from it in
// place, and a request's context carries it as it is, so a cache hit
// builds no [Principal] until one is asked for.
type compactPrincipal struct {
	// issued is when the token was issued, in Unix nanoseconds.
	issued     int64
	generation uint64
	// meta is the token's expiry and the layout (see tokencache.Meta),
	// with the index of the kind in compactKinds.
	meta tokencache.Meta
	// ref is the principal's name, network and token id, one after the
	// other, or its *tokenExt when meta.Ext() is set.
	ref *byte
}

// tokenExt is what an entry keeps of a token that its compact fields do
// not describe.
type tokenExt struct {
	p Principal
	// token is an access token's own standing: whether it is still in
	// the Store. Nil for every other kind.
	token *accountRef[accountStatus]
}

// compactKinds are the kinds of principal an entry keeps compact, by
// meta.Kind().
var compactKinds = [...]PrincipalKind{KindUser, KindHost, KindNode}

// extPrincipal returns p kept whole, as the token cache keeps a
// principal it cannot keep compact.
func extPrincipal(p *Principal) compactPrincipal {
	return compactPrincipal{meta: tokencache.ExtMeta(0), ref: (*byte)(unsafe.Pointer(&tokenExt{p: *p}))}
}

// ext returns the tokenExt that keeps the principal whole, nil when it
// is compact.
func (c *compactPrincipal) ext() *tokenExt {
	if !c.meta.Ext() {
		return nil
	}
	return (*tokenExt)(unsafe.Pointer(c.ref))
}

// principal returns the principal of the entry's token.
func (c *compactPrincipal) principal() Principal {
	if x := c.ext(); x != nil {
		return x.p
	}
	n, m, strs := c.strings()
	return Principal{
		Kind:       compactKinds[c.meta.Kind()],
		Name:       strs[:n],
		Network:    strs[n:m],
		TOTP:       c.meta.TOTP(),
		IssuedAt:   time.Unix(0, c.issued),
		ExpiresAt:  time.Unix(c.meta.Expires(), 0),
		TokenID:    strs[m:],
		generation: generationClaim{value: c.generation, present: c.meta.Generation()},
	}
}

// strings returns a compact principal's name, network and token id, one
// after the other, and the ends of the first two.
func (c *compactPrincipal) strings() (n, m int, strs string) {
	return c.meta.Strings(c.ref)
}

// kind returns the principal's kind.
func (c *compactPrincipal) kind() PrincipalKind {
	if x := c.ext(); x != nil {
		return x.p.Kind
	}
	return compactKinds[c.meta.Kind()]
}

// expiresAt returns when the principal's token expires.
func (c *compactPrincipal) expiresAt() time.Time {
	if x := c.ext(); x != nil {
		return x.p.ExpiresAt
	}
	return time.Unix(c.meta.Expires(), 0)
}

// tokenID returns the id of the principal's token.
func (c *compactPrincipal) tokenID() string {
	if x := c.ext(); x != nil {
		return x.p.TokenID
	}
	_, m, strs := c.strings()
	return strs[m:]
}

// generationClaim returns the account generation the token was minted
// under.
func (c *compactPrincipal) generationClaim() generationClaim {
	if x := c.ext(); x != nil {
		return x.p.generation
	}
	return generationClaim{value: c.generation, present: c.meta.Generation()}
}

// token returns the place of an access token's own standing, nil for any
// other kind.
func (c *compactPrincipal) token() *accountRef[accountStatus] {
	if x := c.ext(); x != nil {
		return x.token
	}
	return nil
}

// newTokenEntry returns the entry of a token with this signature and
// principal.
func newTokenEntry(sig *[32]byte, p *Principal, account, token *accountRef[accountStatus]) tokenEntry {
	e := tokenEntry{sig: *sig, account: account}
	kind := -1
	for i, k := range compactKinds {
		if p.Kind == k {
			kind = i
		}
	}
	expires := p.ExpiresAt.Unix()
	if kind >= 0 && token == nil && len(p.Name) <= tokencache.LenMax && len(p.Network) <= tokencache.LenMax && len(p.TokenID) <= tokencache.LenMax &&
		expires >= 0 && expires <= math.MaxUint32 {
		e.issued, e.generation = p.IssuedAt.UnixNano(), p.generation.value
		e.meta = tokencache.PackMeta(kind, expires, len(p.Name), len(p.Network), len(p.TokenID), p.TOTP, p.generation.present)
		e.ref = unsafe.StringData(p.Name + p.Network + p.TokenID)
		// An expiry with a fraction of a second, a time out of range of
		// Unix nanoseconds, or in a location other than the one time.Unix
		// gives, would come back different.
		if e.principal() == *p {
			return e
		}
	}
	if p.ExpiresAt.Nanosecond() > 0 {
		expires++
	}
	e.issued, e.generation = 0, 0
	e.meta = tokencache.ExtMeta(expires)
	e.ref = (*byte)(unsafe.Pointer(&tokenExt{p: *p, token: token}))
	return e
}

// tokenSignature returns the signature a cache hit must bring (see
// tokenEntry), decoded; false if the token has none of the expected form,
// which the cache then neither finds nor stores.
func tokenSignature(token string) (sig [32]byte, ok bool) {
	if strings.HasPrefix(token, accessTokenPrefix) {
		check := token[strings.LastIndexByte(token, '_')+1:]
		n, err := accessEncoding.Decode(sig[:], []byte(check))
		return sig, err == nil && n == accessCheckBytes
	}
	return sig, tokencache.DecodeSignature(token[strings.LastIndexByte(token, '.')+1:], &sig)
}
