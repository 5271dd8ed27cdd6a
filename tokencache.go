package nmauth

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"math/bits"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/maypok86/otter/v2/stats"
)

// tokenCache remembers the principal of bearer tokens that verified, until
// they expire, so the check on every request costs a hash and a lookup
// rather than a parse. Only tokens whose signature was verified are
// stored.
//
// It is one array of slots, open addressing with linear probing: a
// token's key (a 64-bit hash under a seed drawn at random by each process)
// picks its home slot, and the token is in the first slot from there on
// that holds its key, before the first empty one. A slot holds all that a
// hit reads, in 88 bytes: the key, the signature and the principal's
// compact fields, its strings by their address (one allocation per token,
// which a hit returns without reading). So a hit reads the token's home
// slot and, at the loads the table keeps, often a slot or two beside it,
// and nothing else: at a million tokens, most of a check's cost is reads
// that miss the processor's caches, and they are all in one place.
//
// Readers take no lock and write nothing but a striped hit counter. A
// slot's version is odd while its writer changes it, and counts its
// writes in 64 bits, so it never comes back to a value; a reader that
// finds it odd, or changed, or the slot's key changed, once it has read
// the slot, misses rather than waits (the token is then parsed). Every
// field is read and written atomically, so a hit returns the fields of
// one write of the slot, whose signature, compared whole, is the token's. Writers take one mutex, and a check that finds
// it held does not wait but leaves its token uncached. Slots are emptied
// only by a new table, so a probe that meets an empty slot stops.
//
// The table starts small and grows by a quarter whenever four fifths of
// it is in use, up to a quarter more slots than the cache holds tokens; a
// new table takes every unexpired token of the old one. So while the cache
// holds fewer tokens than its size, a token the doorkeeper admits is held
// until it expires, unless another writer held the mutex (it is then
// stored on a later check). Once it holds its size, a new token takes the slot of
// an expired token on its path (from its home slot to the first empty
// one), else of a live one drawn at random among the first eight there,
// else (its home slot is empty) it stays uncached: no list is kept in
// order of use, so a hit writes nothing.
//
// A token is stored on its second verification, not its first: the
// doorkeeper remembers the tokens seen once lately, so that a fleet larger
// than the cache, whose tokens come back only after the cache has
// forgotten them, costs a parse per check and not also an insertion and an
// eviction.
type tokenCache struct {
	table atomic.Pointer[tokenTable]
	// size is the most tokens the cache holds; maxSlots the most slots
	// its table grows to.
	size, maxSlots int
	seed           maphash.Seed
	door           *doorkeeper
	// mu is held by the writer of the table, which also sets count, the
	// number of slots in use (expired entries among them).
	mu     sync.Mutex
	count  atomic.Int64
	counts *stats.Counter
}

// tokenTable is the token cache's table, replaced whole when it grows.
type tokenTable struct{ slots []tokenSlot }

// tokenSlot is one token's place in the table: a key of 0 is an empty
// slot. Every field is read and written atomically; version orders a
// writer's changes with a reader's reads (see tokenCache).
type tokenSlot struct {
	key     atomic.Uint64
	version atomic.Uint64
	// sig is the token's signature (see tokenEntry), little-endian.
	sig [4]atomic.Uint64
	// The others are tokenEntry's.
	issued     atomic.Int64
	generation atomic.Uint64
	meta       atomic.Uint64
	ref        atomic.Pointer[byte]
	account    atomic.Pointer[accountRef[accountStatus]]
}

// home returns the index of key's home slot.
func (t *tokenTable) home(key uint64) uint64 {
	hi, _ := bits.Mul64(key, uint64(len(t.slots)))
	return hi
}

// find returns the slot that holds key, or nil.
func (t *tokenTable) find(key uint64) *tokenSlot {
	n := uint64(len(t.slots))
	for i, j := t.home(key), uint64(0); j < n; j++ {
		s := &t.slots[i]
		switch s.key.Load() {
		case key:
			return s
		case 0:
			return nil
		}
		if i++; i == n {
			i = 0
		}
	}
	return nil
}

// load reads the entry of s into e and reports whether it is the entry of
// key as one write left it: false if a writer changed s meanwhile.
func (s *tokenSlot) load(key uint64, e *tokenEntry) bool {
	v := s.version.Load()
	for i := range s.sig {
		binary.LittleEndian.PutUint64(e.sig[8*i:], s.sig[i].Load())
	}
	e.issued, e.generation, e.meta = s.issued.Load(), s.generation.Load(), s.meta.Load()
	e.ref, e.account = s.ref.Load(), s.account.Load()
	return v&1 == 0 && s.key.Load() == key && s.version.Load() == v
}

// store writes e under key into s. It is called with the cache's mu held,
// or on a table no reader has yet.
func (s *tokenSlot) store(key uint64, e *tokenEntry) {
	s.version.Add(1)
	for i := range s.sig {
		s.sig[i].Store(binary.LittleEndian.Uint64(e.sig[8*i:]))
	}
	s.issued.Store(e.issued)
	s.generation.Store(e.generation)
	s.meta.Store(e.meta)
	s.ref.Store(e.ref)
	s.account.Store(e.account)
	s.key.Store(key)
	s.version.Add(1)
}

// expired reports whether the token in s has expired at now.
func (s *tokenSlot) expired(now time.Time) bool {
	return int64(s.meta.Load()>>32) <= now.Unix()
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
	// meta is the token's expiry in Unix seconds, rounded up for a
	// tokenExt (high half), and the layout (low half): metaKind, the meta
	// flags, and the lengths of the name, network and token id
	// (metaLenBits each, from metaNameShift on).
	meta uint64
	// ref is the principal's name, network and token id, one after the
	// other, or its *tokenExt when metaExt is set.
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

const (
	metaKind       = 3
	metaTOTP       = 1 << 2
	metaGeneration = 1 << 3
	metaExt        = 1 << 4
	metaNameShift  = 5
	metaLenBits    = 9
	metaLenMax     = 1<<metaLenBits - 1
)

// compactKinds are the kinds of principal an entry keeps compact, by
// meta&metaKind.
var compactKinds = [...]PrincipalKind{KindUser, KindHost, KindNode}

// extPrincipal returns p kept whole, as the token cache keeps a
// principal it cannot keep compact.
func extPrincipal(p *Principal) compactPrincipal {
	return compactPrincipal{meta: metaExt, ref: (*byte)(unsafe.Pointer(&tokenExt{p: *p}))}
}

// ext returns the tokenExt that keeps the principal whole, nil when it
// is compact.
func (c *compactPrincipal) ext() *tokenExt {
	if c.meta&metaExt == 0 {
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
		Kind:       compactKinds[c.meta&metaKind],
		Name:       strs[:n],
		Network:    strs[n:m],
		TOTP:       c.meta&metaTOTP != 0,
		IssuedAt:   time.Unix(0, c.issued),
		ExpiresAt:  time.Unix(int64(c.meta>>32), 0),
		TokenID:    strs[m:],
		generation: generationClaim{value: c.generation, present: c.meta&metaGeneration != 0},
	}
}

// strings returns a compact principal's name, network and token id, one
// after the other, and the ends of the first two.
func (c *compactPrincipal) strings() (n, m int, strs string) {
	n = int(c.meta >> metaNameShift & metaLenMax)
	m = n + int(c.meta>>(metaNameShift+metaLenBits)&metaLenMax)
	return n, m, unsafe.String(c.ref, m+int(c.meta>>(metaNameShift+2*metaLenBits)&metaLenMax))
}

// kind returns the principal's kind.
func (c *compactPrincipal) kind() PrincipalKind {
	if x := c.ext(); x != nil {
		return x.p.Kind
	}
	return compactKinds[c.meta&metaKind]
}

// expiresAt returns when the principal's token expires.
func (c *compactPrincipal) expiresAt() time.Time {
	if x := c.ext(); x != nil {
		return x.p.ExpiresAt
	}
	return time.Unix(int64(c.meta>>32), 0)
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
	return generationClaim{value: c.generation, present: c.meta&metaGeneration != 0}
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
	if kind >= 0 && token == nil && len(p.Name) <= metaLenMax && len(p.Network) <= metaLenMax && len(p.TokenID) <= metaLenMax &&
		expires >= 0 && expires <= math.MaxUint32 {
		e.issued, e.generation = p.IssuedAt.UnixNano(), p.generation.value
		e.meta = uint64(expires)<<32 | uint64(kind) |
			uint64(len(p.Name))<<metaNameShift | uint64(len(p.Network))<<(metaNameShift+metaLenBits) | uint64(len(p.TokenID))<<(metaNameShift+2*metaLenBits)
		if p.TOTP {
			e.meta |= metaTOTP
		}
		if p.generation.present {
			e.meta |= metaGeneration
		}
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
	e.meta = uint64(min(max(expires, 0), math.MaxUint32))<<32 | metaExt
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
	return sig, decodeSignature(token[strings.LastIndexByte(token, '.')+1:], &sig)
}

// base64URL is the value of each character of unpadded base64url, 0xff
// for a character outside it.
var base64URL = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_" {
		t[c] = byte(i)
	}
	return t
}()

// decodeSignature decodes s, the unpadded base64url of 32 bytes, into sig
// as base64.RawURLEncoding does, spare bits ignored, and reports whether
// it is one. It is the bearer check's hit path, so it does in straight
// code what the general decoder does in a loop.
func decodeSignature(s string, sig *[32]byte) bool {
	if len(s) != 43 {
		return false
	}
	var bad byte
	for i, j := 0, 0; i < 40; i, j = i+4, j+3 {
		a, b, c, d := base64URL[s[i]], base64URL[s[i+1]], base64URL[s[i+2]], base64URL[s[i+3]]
		bad |= a | b | c | d
		n := uint32(a)<<18 | uint32(b)<<12 | uint32(c)<<6 | uint32(d)
		sig[j], sig[j+1], sig[j+2] = byte(n>>16), byte(n>>8), byte(n)
	}
	a, b, c := base64URL[s[40]], base64URL[s[41]], base64URL[s[42]]
	bad |= a | b | c
	n := uint32(a)<<18 | uint32(b)<<12 | uint32(c)<<6
	sig[30], sig[31] = byte(n>>16), byte(n>>8)
	return bad&0x80 == 0
}

// sameSignature compares two signatures in constant time.
func sameSignature(a, b *[32]byte) bool {
	var x uint64
	for i := 0; i < len(a); i += 8 {
		x |= binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:])
	}
	return x == 0
}

// newTokenCache returns a cache of at most size tokens, or one that holds
// none when size is negative.
func newTokenCache(size int) *tokenCache {
	if size <= 0 {
		return &tokenCache{}
	}
	c := &tokenCache{
		size:     size,
		maxSlots: size + max(size/4, 1),
		seed:     maphash.MakeSeed(),
		door:     newDoorkeeper(size),
		counts:   stats.NewCounter(),
	}
	c.table.Store(&tokenTable{slots: make([]tokenSlot, min(c.maxSlots, 512))})
	return c
}

// key returns the token's key: never 0, the key of an empty slot.
func (c *tokenCache) key(token string) uint64 {
	return max(maphash.String(c.seed, token), 1)
}

// get returns the token's key, for put, and its entry if the token is in
// the cache, else false. A disabled cache spends no hash. An entry is
// returned whatever its expiry; the caller checks that, by the same clock
// as an uncached token's.
func (c *tokenCache) get(token string) (uint64, tokenEntry, bool) {
	var e tokenEntry
	if c.door == nil {
		return 0, e, false
	}
	return c.lookup(c.key(token), token)
}

// lookup is get for the token of this key.
func (c *tokenCache) lookup(key uint64, token string) (uint64, tokenEntry, bool) {
	var e tokenEntry
	if s := c.table.Load().find(key); s != nil && s.load(key, &e) {
		if sig, ok := tokenSignature(token); ok && sameSignature(&e.sig, &sig) {
			c.counts.RecordHits(1)
			return key, e, true
		}
	}
	c.counts.RecordMisses(1)
	return key, tokenEntry{}, false
}

// put remembers a token that verified, with its principal and the places
// of its standing, until it expires, if the token verified once before
// lately; otherwise it notes the token in the doorkeeper only.
func (c *tokenCache) put(key uint64, token string, p *Principal, account, tokenRef *accountRef[accountStatus], now time.Time) {
	if c.door == nil || !now.Before(p.ExpiresAt) || !c.door.admit(key) {
		return
	}
	sig, ok := tokenSignature(token)
	if !ok || !c.mu.TryLock() {
		return
	}
	defer c.mu.Unlock()
	e := newTokenEntry(&sig, p, account, tokenRef)
	t := c.table.Load()
	if len(t.slots) < c.maxSlots && int(c.count.Load()) >= len(t.slots)*4/5 {
		t = c.grow(t, now)
	}
	s, empty := t.slot(key, now, int(c.count.Load()) < c.size)
	if s == nil {
		return
	}
	s.store(key, &e)
	if empty {
		c.count.Add(1)
	}
}

// slot returns the slot that key's entry is to take in t, and whether it
// is empty: the key's own slot; else, if fill, the first empty one on its
// path; else an expired entry's on its path; else, if not fill, a live
// one's drawn at random among the first eight on its path. It returns nil
// when there is none of these. It is called with c.mu held.
func (t *tokenTable) slot(key uint64, now time.Time, fill bool) (*tokenSlot, bool) {
	n := uint64(len(t.slots))
	var expired *tokenSlot
	var live [8]*tokenSlot
	nlive := 0
probe:
	for i, j := t.home(key), uint64(0); j < n; j++ {
		s := &t.slots[i]
		switch k := s.key.Load(); {
		case k == key:
			return s, false
		case k == 0:
			if fill {
				return s, true
			}
			break probe
		case expired == nil && s.expired(now):
			expired = s
		case nlive < len(live):
			live[nlive] = s
			nlive++
		}
		if i++; i == n {
			i = 0
		}
	}
	switch {
	case expired != nil:
		return expired, false
	case !fill && nlive > 0:
		return live[rand.IntN(nlive)], false
	}
	return nil, false
}

// grow replaces t by a table with a quarter more slots, at most
// c.maxSlots, that holds every unexpired entry of t, and returns it. It is
// called with c.mu held, when t has fewer than c.maxSlots. Readers go on
// reading t until the new table is in place.
func (c *tokenCache) grow(t *tokenTable, now time.Time) *tokenTable {
	n := &tokenTable{slots: make([]tokenSlot, min(len(t.slots)+max(len(t.slots)/4, 1), c.maxSlots))}
	count := 0
	var e tokenEntry
	for i := range t.slots {
		s := &t.slots[i]
		key := s.key.Load()
		if key == 0 || s.expired(now) {
			continue
		}
		s.load(key, &e)
		// n has more slots than t, so every entry finds an empty one.
		if ns, _ := n.slot(key, now, true); ns != nil {
			ns.store(key, &e)
			count++
		}
	}
	c.count.Store(int64(count))
	c.table.Store(n)
	return n
}

// doorkeeper is a Bloom filter of the token digests seen lately: it
// answers whether a digest was added since it last cleared itself, which
// it does after as many additions as the cache has room for. It may answer
// yes for a digest never added (about once in 200 when full, at worst), which costs
// a cache entry; and no for one added before it cleared, which costs one
// more parse. It never decides whether a token is accepted.
type doorkeeper struct {
	bits  []atomic.Uint64
	mask  uint64
	limit int64
	added atomic.Int64
}

// doorkeeperHashes is how many bits a digest sets; it spends at least 16
// bits per digest.
const doorkeeperHashes = 3

// newDoorkeeper returns a doorkeeper for a cache of size tokens.
func newDoorkeeper(size int) *doorkeeper {
	nbits := uint64(64)
	for nbits < 16*uint64(size) {
		nbits <<= 1
	}
	return &doorkeeper{bits: make([]atomic.Uint64, nbits/64), mask: nbits - 1, limit: int64(size)}
}

// admit reports whether key was added since the doorkeeper last cleared,
// and adds it. The key is a seeded hash; its two halves make the probes
// (double hashing).
func (k *doorkeeper) admit(key uint64) bool {
	seen := true
	step := key>>32 | 1
	for i := range uint64(doorkeeperHashes) {
		bit := (key + i*step) & k.mask
		w, m := &k.bits[bit/64], uint64(1)<<(bit%64)
		if w.Load()&m == 0 {
			seen = false
			w.Or(m)
		}
	}
	if !seen && k.added.Add(1) == k.limit {
		for i := range k.bits {
			k.bits[i].Store(0)
		}
		k.added.Store(0)
	}
	return seen
}
