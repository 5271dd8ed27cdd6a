package nmauth

import (
	"slices"
	"strings"
	"time"

	"github.com/nmauth/nmauth/internal/keyed"
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

type (
	tokenEntry     = tokencache.Entry[accountRef[accountStatus]]
	tokenSlotEntry = tokencache.SlotEntry[accountRef[accountStatus]]
)

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
			if sig, ok := tokenSignature(token); ok && tokencache.SameSignature(&e.Sig, &sig) {
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

// compactPrincipal is a principal as the token cache keeps it (see
// tokencache.Principal). The bearer check reads the fields it needs from
// it in place, and a request's context carries it as it is, so a cache
// hit builds no [Principal] until one is asked for.
type compactPrincipal = tokencache.Principal

// tokenExt is what an entry keeps of a token that its compact fields do
// not describe.
type tokenExt struct {
	p Principal
	// token is an access token's own standing: whether it is still in
	// the Store. Nil for every other kind.
	token *accountRef[accountStatus]
}

// compactKinds are the kinds of principal an entry keeps compact, by
// their index.
var compactKinds = [...]PrincipalKind{KindUser, KindHost, KindNode}

// extPrincipal returns p kept whole, as the token cache keeps a
// principal it cannot keep compact.
func extPrincipal(p *Principal) compactPrincipal {
	return tokencache.Whole(&tokenExt{p: *p}, time.Time{})
}

// cachedPrincipal returns the principal c keeps.
func cachedPrincipal(c *compactPrincipal) Principal {
	if x := tokencache.WholeOf[tokenExt](c); x != nil {
		return x.p
	}
	gen, hasGen := c.Generation()
	p := Principal{Kind: compactKinds[c.Kind()], TOTP: c.TOTP(), IssuedAt: c.IssuedAt(), ExpiresAt: c.ExpiresAt(),
		generation: generationClaim{Value: gen, Present: hasGen}}
	p.Name, p.Network, p.TokenID = c.Strings()
	return p
}

// cachedKind returns the kind of the principal c keeps.
func cachedKind(c *compactPrincipal) PrincipalKind {
	if x := tokencache.WholeOf[tokenExt](c); x != nil {
		return x.p.Kind
	}
	return compactKinds[c.Kind()]
}

// cachedExpiry returns when the token of the principal c keeps expires.
func cachedExpiry(c *compactPrincipal) time.Time {
	if x := tokencache.WholeOf[tokenExt](c); x != nil {
		return x.p.ExpiresAt
	}
	return c.ExpiresAt()
}

// cachedStanding returns what the standing of the account decides of the
// principal c keeps: the generation its token was minted under, and the
// token's id.
func cachedStanding(c *compactPrincipal) (generationClaim, string) {
	if x := tokencache.WholeOf[tokenExt](c); x != nil {
		return x.p.generation, x.p.TokenID
	}
	gen, hasGen := c.Generation()
	return generationClaim{Value: gen, Present: hasGen}, c.ID()
}

// cachedToken returns the place of an access token's own standing, nil
// for any other kind.
func cachedToken(c *compactPrincipal) *accountRef[accountStatus] {
	if x := tokencache.WholeOf[tokenExt](c); x != nil {
		return x.token
	}
	return nil
}

// newTokenEntry returns the entry of a token with this signature and
// principal: compact if its kind is one of compactKinds and its fields
// come back the same (an expiry with a fraction of a second, a time out
// of range of Unix nanoseconds, or in a location other than the one
// time.Unix gives, would not), else kept whole.
func newTokenEntry(sig *[32]byte, p *Principal, account, token *accountRef[accountStatus]) tokenEntry {
	e := tokenEntry{Sig: *sig, Account: account}
	if i := slices.Index(compactKinds[:], p.Kind); i >= 0 && token == nil {
		var ok bool
		e.Principal, ok = tokencache.Compact(i, p.Name, p.Network, p.TokenID, p.IssuedAt, p.ExpiresAt, p.TOTP, p.generation.Value, p.generation.Present)
		if ok && cachedPrincipal(&e.Principal) == *p {
			return e
		}
	}
	e.Principal = tokencache.Whole(&tokenExt{p: *p, token: token}, p.ExpiresAt)
	return e
}

// tokenSignature returns the signature a cache hit must bring (see
// tokencache.Entry), decoded; false if the token has none of the expected form,
// which the cache then neither finds nor stores.
func tokenSignature(token string) (sig [32]byte, ok bool) {
	if strings.HasPrefix(token, accessTokenPrefix) {
		check := token[strings.LastIndexByte(token, '_')+1:]
		n, err := keyed.Encoding.Decode(sig[:], []byte(check))
		return sig, err == nil && n == keyed.CheckBytes
	}
	return sig, tokencache.DecodeSignature(token[strings.LastIndexByte(token, '.')+1:], &sig)
}
