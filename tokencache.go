package nmauth

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2/stats"
)

// tokenCache remembers the principal of bearer tokens that verified, until
// they expire, so the check on every request costs a hash and a lookup
// rather than a parse. Only tokens whose signature was verified are
// stored.
//
// It is a table of buckets of tokenWays slots, each slot the key of a
// token (a 64-bit hash under a seed drawn at random by each process) and
// a pointer to its entry. A token's key picks its bucket, and a second
// one for when the first is full, so a lookup nearly always reads one
// bucket's two cache lines and the entry: at a million tokens, most of a
// check's cost is those reads missing the processor's caches, and there
// are as few of them as there can be. Readers take no lock and write
// nothing but a striped hit counter; writers take one mutex, and a check
// that finds it held does not wait but leaves its token uncached. The
// table starts small and doubles when it fills past three quarters or
// both of a token's buckets are full, up to a quarter more slots than the
// cache holds tokens. When both of a token's buckets are full then, it
// takes the slot of an expired token; else, while the cache holds fewer
// tokens than its size, it stays uncached, and once it holds its size it
// takes the slot of one drawn at random from its first bucket: no list is
// kept in order of use, so a hit writes nothing.
//
// A token is stored on its second verification, not its first: the
// doorkeeper remembers the tokens seen once lately, so that a fleet larger
// than the cache, whose tokens come back only after the cache has
// forgotten them, costs a parse per check and not also an insertion and an
// eviction.
type tokenCache struct {
	table atomic.Pointer[tokenTable]
	// size is the most tokens the cache holds; maxBuckets the most
	// buckets its table grows to.
	size, maxBuckets int
	seed             maphash.Seed
	door             *doorkeeper
	// mu is held by the writer of the table, which also sets count, the
	// number of slots in use (expired entries among them).
	mu     sync.Mutex
	count  atomic.Int64
	counts *stats.Counter
}

// tokenWays is the number of slots of a bucket of the token cache.
const tokenWays = 8

// tokenTable is the token cache's table, replaced whole when it grows.
type tokenTable struct{ buckets []tokenBucket }

// tokenBucket is tokenWays slots: a key of 0 is an empty slot. The keys
// and entries are written one after the other, so a reader may find a key
// beside the entry of another token; the entry's signature tells them
// apart (see tokenEntry).
type tokenBucket struct {
	keys    [tokenWays]atomic.Uint64
	entries [tokenWays]atomic.Pointer[tokenEntry]
}

// bucket returns the bucket of key.
func (t *tokenTable) bucket(key uint64) *tokenBucket {
	return &t.buckets[(key>>32)*uint64(len(t.buckets))>>32]
}

// tokenEntry is what the token cache keeps of a token that verified: its
// principal, the token's signature, and the account whose standing
// decides it. A user, host or node token's principal is kept compact: its
// three strings in one, its times as Unix nanoseconds; any other (an
// access token's, or one whose times would not come back the same) is
// kept whole in ext.
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
	issued, expires int64
	generation      uint64
	// strs is the principal's name, network and token id, one after the
	// other; nameLen and netLen cut it.
	strs    string
	account *accountRef[accountStatus]
	ext     *tokenExt
	sig     [32]byte
	nameLen uint16
	netLen  uint16
	kind    uint8
	flags   uint8
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
	entryTOTP = 1 << iota
	entryGeneration
)

// compactKinds are the kinds of principal an entry keeps compact, by
// tokenEntry.kind.
var compactKinds = [...]PrincipalKind{KindUser, KindHost, KindNode}

// principal returns the principal of the entry's token.
func (e *tokenEntry) principal() Principal {
	if e.ext != nil {
		return e.ext.p
	}
	n, m := int(e.nameLen), int(e.nameLen)+int(e.netLen)
	return Principal{
		Kind:       compactKinds[e.kind],
		Name:       e.strs[:n],
		Network:    e.strs[n:m],
		TOTP:       e.flags&entryTOTP != 0,
		IssuedAt:   time.Unix(0, e.issued),
		ExpiresAt:  time.Unix(0, e.expires),
		TokenID:    e.strs[m:],
		generation: generationClaim{value: e.generation, present: e.flags&entryGeneration != 0},
	}
}

// token returns the place of an access token's own standing, nil for any
// other kind.
func (e *tokenEntry) token() *accountRef[accountStatus] {
	if e.ext == nil {
		return nil
	}
	return e.ext.token
}

// newTokenEntry returns the entry of a token with this signature and
// principal.
func newTokenEntry(sig *[32]byte, p *Principal, account, token *accountRef[accountStatus]) *tokenEntry {
	e := &tokenEntry{sig: *sig, account: account, expires: p.ExpiresAt.UnixNano(), issued: p.IssuedAt.UnixNano()}
	kind := -1
	for i, k := range compactKinds {
		if p.Kind == k {
			kind = i
		}
	}
	if kind >= 0 && token == nil && len(p.Name) <= math.MaxUint16 && len(p.Network) <= math.MaxUint16 {
		e.kind, e.generation = uint8(kind), p.generation.value
		e.nameLen, e.netLen = uint16(len(p.Name)), uint16(len(p.Network))
		e.strs = p.Name + p.Network + p.TokenID
		if p.TOTP {
			e.flags |= entryTOTP
		}
		if p.generation.present {
			e.flags |= entryGeneration
		}
		// A time out of range of Unix nanoseconds, or in a location other
		// than the one time.Unix gives, would come back different.
		if e.principal() == *p {
			return e
		}
		e.strs = ""
	}
	e.ext = &tokenExt{p: *p, token: token}
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
	maxBuckets := (size + size/4 + tokenWays - 1) / tokenWays
	c := &tokenCache{
		size:       size,
		maxBuckets: maxBuckets,
		seed:       maphash.MakeSeed(),
		door:       newDoorkeeper(size),
		counts:     stats.NewCounter(),
	}
	c.table.Store(&tokenTable{buckets: make([]tokenBucket, min(maxBuckets, 64))})
	return c
}

// key returns the token's key: never 0, the key of an empty slot.
func (c *tokenCache) key(token string) uint64 {
	return max(maphash.String(c.seed, token), 1)
}

// get returns the token's key, for put, and its entry if the token is in
// the cache, else nil. A disabled cache spends no hash. An entry is
// returned whatever its expiry; the caller checks that, by the same clock
// as an uncached token's.
func (c *tokenCache) get(token string) (uint64, *tokenEntry) {
	if c.door == nil {
		return 0, nil
	}
	key := c.key(token)
	t := c.table.Load()
	e, full := t.bucket(key).find(key)
	if e == nil && full {
		e, _ = t.bucket2(key).find(key)
	}
	if e != nil {
		if sig, ok := tokenSignature(token); ok && sameSignature(&e.sig, &sig) {
			c.counts.RecordHits(1)
			return key, e
		}
	}
	c.counts.RecordMisses(1)
	return key, nil
}

// find returns the entry in b under key, or nil, and whether b has no
// empty slot.
func (b *tokenBucket) find(key uint64) (*tokenEntry, bool) {
	full := true
	for i := range b.keys {
		switch b.keys[i].Load() {
		case key:
			return b.entries[i].Load(), true
		case 0:
			full = false
		}
	}
	return nil, full
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
	for {
		t := c.table.Load()
		slots, count := len(t.buckets)*tokenWays, int(c.count.Load())
		canGrow := len(t.buckets) < c.maxBuckets
		if canGrow && count >= slots*3/4 {
			c.grow(t, now)
			continue
		}
		fill := count < c.size
		b, i, empty := t.slot(key, now, fill)
		if b == nil && canGrow && fill {
			c.grow(t, now)
			continue
		}
		if b == nil {
			if b, i = t.bucket(key), -1; fill {
				return
			}
			// Full: a live token drawn at random gives way.
			n := rand.IntN(tokenWays)
			for j := range tokenWays {
				if b.keys[(n+j)%tokenWays].Load() != 0 {
					i = (n + j) % tokenWays
					break
				}
			}
			if i < 0 {
				return
			}
		}
		b.entries[i].Store(e)
		b.keys[i].Store(key)
		if empty {
			c.count.Add(1)
		}
		return
	}
}

// bucket2 returns the second bucket of key, where its entry is when its
// first bucket was full.
func (t *tokenTable) bucket2(key uint64) *tokenBucket {
	return &t.buckets[(key&math.MaxUint32)*uint64(len(t.buckets))>>32]
}

// slot returns the slot that key's entry is to take in t, and whether it
// is empty: the key's own slot; else, if fill, an empty one of its first
// bucket, or of its second when the first is full; else an expired
// entry's. It returns a nil bucket when there is none of these. Slots are
// emptied only by a new table, so an entry in the second bucket is always
// behind a full first one, where get looks for it. It is called with c.mu
// held.
func (t *tokenTable) slot(key uint64, now time.Time, fill bool) (*tokenBucket, int, bool) {
	var empty, expired *tokenBucket
	ei, xi := 0, 0
	for _, b := range [2]*tokenBucket{t.bucket(key), t.bucket2(key)} {
		for i := range b.keys {
			switch k := b.keys[i].Load(); {
			case k == key:
				return b, i, false
			case k == 0:
				if empty == nil {
					empty, ei = b, i
				}
			case expired == nil && b.entries[i].Load().expires <= now.UnixNano():
				expired, xi = b, i
			}
		}
		if empty != nil {
			break
		}
	}
	switch {
	case empty != nil && fill:
		return empty, ei, true
	case expired != nil:
		return expired, xi, false
	}
	return nil, 0, false
}

// grow replaces t by a table of twice as many buckets, at most
// c.maxBuckets, that holds t's unexpired entries. It is called with c.mu
// held. Readers go on reading t until the new table is in place.
func (c *tokenCache) grow(t *tokenTable, now time.Time) {
	n := &tokenTable{buckets: make([]tokenBucket, min(2*len(t.buckets), c.maxBuckets))}
	count := 0
	for bi := range t.buckets {
		old := &t.buckets[bi]
		for i := range old.keys {
			key, e := old.keys[i].Load(), old.entries[i].Load()
			if key == 0 || e.expires <= now.UnixNano() {
				continue
			}
			if b, j, empty := n.slot(key, now, true); empty {
				b.entries[j].Store(e)
				b.keys[j].Store(key)
				count++
			}
		}
	}
	c.count.Store(int64(count))
	c.table.Store(n)
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
