package nmauth

import (
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/golang-jwt/jwt/v5"

	"github.com/nmauth/nmauth/internal/jwtenc"
	"github.com/nmauth/nmauth/internal/rootkey"
)

// minSecretLen is the least number of bytes a root secret may have.
const minSecretLen = 32

// tokenKind names the four JWT kinds. Each kind has its own audience and its
// own signing subkey, so a token of one kind can never verify as another
// (RFC 8725 §3.12).
type tokenKind uint8

const (
	kindUser tokenKind = iota
	kindPreAuth
	kindHost
	kindNode
	numKinds
)

var kindAudience = [numKinds]string{
	kindUser:    "nmauth:user",
	kindPreAuth: "nmauth:pre-auth",
	kindHost:    "nmauth:host",
	kindNode:    "nmauth:node",
}

func (k tokenKind) principalKind() PrincipalKind {
	switch k {
	case kindUser:
		return KindUser
	case kindHost:
		return KindHost
	case kindNode:
		return KindNode
	}
	return ""
}

// errTokenKind is returned by the key function for a token whose kind is
// not accepted where it was presented.
var errTokenKind = errors.New("nmauth: token kind not accepted here")

// claims is the payload of every token this package issues.
type claims struct {
	jwt.RegisteredClaims
	// IssuedAt shadows the embedded iat to keep nanoseconds, so that a
	// revocation at an instant is exact (see issuedAt).
	IssuedAt issuedAt `json:"iat"`
	// Network is the network of a node token.
	Network string `json:"net,omitempty"`
	// TOTP marks a user token minted by a login that passed a second
	// factor (see [Principal.TOTP]).
	TOTP bool `json:"totp,omitempty"`
	// Generation is the account's revocation counter when the token was
	// minted (see the Generation of [State]); user, pre-auth and host tokens must
	// carry it. Absent from node tokens an application mints itself.
	Generation generationClaim `json:"gen,omitzero"`
}

// generationClaim is the gen claim, which a token may lack. It is a value
// rather than a pointer, so that parsing a token allocates nothing for it
// and a cached principal holds no pointer for it.
type generationClaim struct {
	value uint64
	// present reports that the token carries the claim.
	present bool
}

// IsZero reports an absent claim, which omitzero leaves out.
func (g generationClaim) IsZero() bool { return !g.present }

func (g generationClaim) MarshalJSON() ([]byte, error) {
	return strconv.AppendUint(nil, g.value, 10), nil
}

// UnmarshalJSON reads a non-negative integer; null, as for a pointer,
// leaves the claim absent.
func (g *generationClaim) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*g = generationClaim{}
		return nil
	}
	n, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return errors.New("nmauth: malformed gen")
	}
	*g = generationClaim{value: n, present: true}
	return nil
}

// GetIssuedAt implements jwt.Claims with the precise iat.
func (c *claims) GetIssuedAt() (*jwt.NumericDate, error) {
	return jwt.NewNumericDate(c.IssuedAt.Time), nil
}

// issuedAt is a NumericDate with nanoseconds, written as a decimal
// fraction as RFC 7519 §2 allows: "1772366460.123456789".
type issuedAt struct{ time.Time }

func (t issuedAt) MarshalJSON() ([]byte, error) { return jwtenc.AppendTime(nil, t.Time), nil }

func (t *issuedAt) UnmarshalJSON(b []byte) error {
	iat, err := jwtenc.ParseTime(b)
	if err != nil {
		return err
	}
	t.Time = iat
	return nil
}

// appendClaims appends c as JSON, the bytes encoding/json writes for it
// (a test holds the two equal), with aud, c.Audience already encoded.
// It is written out because minting is on the path of every login (see
// internal/jwtenc).
func appendClaims(b []byte, c *claims, aud []byte) ([]byte, error) {
	o := jwtenc.Open(b)
	if c.Issuer != "" {
		o = o.String("iss", c.Issuer)
	}
	if c.Subject != "" {
		o = o.String("sub", c.Subject)
	}
	if len(c.Audience) > 0 {
		o = o.Raw("aud", aud)
	}
	var err error
	if o, err = o.Date("exp", c.ExpiresAt); err != nil {
		return nil, err
	}
	if o, err = o.Date("nbf", c.NotBefore); err != nil {
		return nil, err
	}
	if c.ID != "" {
		o = o.String("jti", c.ID)
	}
	o = o.Time("iat", c.IssuedAt.Time)
	if c.Network != "" {
		o = o.String("net", c.Network)
	}
	if c.TOTP {
		o = o.Raw("totp", []byte("true"))
	}
	if c.Generation.present {
		o = o.Uint("gen", c.Generation.value)
	}
	return o.Close(), nil
}

// ringKey holds the subkeys derived from one root secret.
type ringKey struct {
	id string
	// check is the value a Store keeps to recognise this secret later
	// (see KeyCheckStore); hex of its own HKDF subkey.
	check  string
	jwt    [numKinds][]byte
	enroll []byte
	seal   cipher.AEAD
	// machine keys the digests of machine secrets (see credential.go);
	// machineHMACs holds HMAC states under it, ready to reuse.
	machine      []byte
	machineHMACs sync.Pool
	// header is the encoded JOSE header of the tokens this key signs:
	// {"alg":"HS256","kid":"<id>","typ":"JWT"}, in base64url.
	header string
	// jwtHMACs holds HMAC states under jwt's keys, by kind, ready to
	// reuse.
	jwtHMACs [numKinds]sync.Pool
}

// signJWT returns the HS256 signature of a token of kind whose signing
// input is signing, as jwt.SigningMethodHS256 makes it under jwt[kind].
func (k *ringKey) signJWT(kind tokenKind, signing []byte) (sig [sha256.Size]byte) {
	m, _ := k.jwtHMACs[kind].Get().(hash.Hash)
	if m == nil {
		m = hmac.New(sha256.New, k.jwt[kind])
	}
	m.Write(signing)
	m.Sum(sig[:0])
	m.Reset()
	k.jwtHMACs[kind].Put(m)
	return sig
}

// keyRing holds the subkeys of every configured root secret. The first
// signs and seals; all verify and open, found by their id.
type keyRing struct {
	keys []*ringKey
}

func newKeyRing(secrets [][]byte) (*keyRing, error) {
	if len(secrets) == 0 {
		return nil, errors.New("nmauth: no root secret configured")
	}
	r := &keyRing{}
	seen := map[string]bool{}
	for i, s := range secrets {
		if len(s) < minSecretLen {
			return nil, fmt.Errorf("nmauth: root secret %d is %d bytes, need at least %d", i, len(s), minSecretLen)
		}
		k, err := deriveRingKey(s)
		if err != nil {
			return nil, err
		}
		if seen[k.id] {
			return nil, fmt.Errorf("nmauth: root secret %d is listed twice", i)
		}
		seen[k.id] = true
		r.keys = append(r.keys, k)
	}
	return r, nil
}

func deriveRingKey(secret []byte) (*ringKey, error) {
	k := &ringKey{}
	k.id = hex.EncodeToString(rootkey.Subkey(secret, "nmauth key id", 8))
	k.check = hex.EncodeToString(rootkey.Subkey(secret, "nmauth key check", 32))
	for kind := range numKinds {
		k.jwt[kind] = rootkey.Subkey(secret, "nmauth jwt "+kindAudience[kind], 32)
	}
	k.enroll = rootkey.Subkey(secret, "nmauth enrollment signature", 32)
	k.machine = rootkey.Subkey(secret, "nmauth machine secret", 32)
	header, err := json.Marshal(map[string]string{"alg": jwt.SigningMethodHS256.Alg(), "kid": k.id, "typ": "JWT"})
	if err != nil {
		return nil, err
	}
	k.header = base64.RawURLEncoding.EncodeToString(header)
	if k.seal, err = rootkey.NewSealer(rootkey.Subkey(secret, "nmauth totp seal", 32)); err != nil {
		return nil, err
	}
	return k, nil
}

func (r *keyRing) signer() *ringKey { return r.keys[0] }

// matchesAny reports whether a stored check value, by key id, is that of
// a configured secret. The values are compared in constant time.
func (r *keyRing) matchesAny(checks map[string]string) bool {
	for _, k := range r.keys {
		if v, ok := checks[k.id]; ok && hmac.Equal([]byte(v), []byte(k.check)) {
			return true
		}
	}
	return false
}

// sealedKeyID is the key id a sealed TOTP secret names, "" if malformed.
func (r *keyRing) sealedKeyID(sealed []byte) string { return rootkey.SealedKeyID(sealed) }

func (r *keyRing) byID(id string) *ringKey {
	for _, k := range r.keys {
		if k.id == id {
			return k
		}
	}
	return nil
}

// tokenMinter signs tokens of every kind with the ring's first key.
type tokenMinter struct {
	ring   *keyRing
	issuer string
	rand   io.Reader
	// audience is each kind's aud claim, encoded once.
	audience [numKinds][]byte
	// netmaker, when set, mints the user and host tokens in Netmaker's
	// format (see [Config.NetmakerSecret]).
	netmaker *netmakerFormat
}

func newTokenMinter(ring *keyRing, issuer string, rand io.Reader) (*tokenMinter, error) {
	m := &tokenMinter{ring: ring, issuer: issuer, rand: rand}
	for k := range m.audience {
		aud, err := jwt.ClaimStrings{kindAudience[k]}.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("nmauth: token audience: %w", err)
		}
		m.audience[k] = aud
	}
	return m, nil
}

// mintArgs describes one token to sign.
type mintArgs struct {
	kind     tokenKind
	subject  string
	network  string
	totp     bool
	issuedAt time.Time
	ttl      time.Duration
	// generation is the account's counter; nil for a token bound to no
	// account.
	generation *uint64
	// mac is the MAC address a host logged in with, which a host token
	// in Netmaker's format carries.
	mac string
}

// mint signs a token and returns it with its jti.
func (m *tokenMinter) mint(a mintArgs) (token, jti string, err error) {
	if m.netmaker != nil && (a.kind == kindUser || a.kind == kindHost) {
		return m.netmaker.mint(a)
	}
	id := make([]byte, 16)
	if _, err := io.ReadFull(m.rand, id); err != nil {
		return "", "", fmt.Errorf("nmauth: token id: %w", err)
	}
	jti = base64.RawURLEncoding.EncodeToString(id)
	c := claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    m.issuer,
			Subject:   a.subject,
			Audience:  jwt.ClaimStrings{kindAudience[a.kind]},
			ExpiresAt: jwt.NewNumericDate(a.issuedAt.Add(a.ttl)),
			ID:        jti,
		},
		IssuedAt: issuedAt{a.issuedAt},
		Network:  a.network,
		TOTP:     a.totp,
	}
	if a.generation != nil {
		c.Generation = generationClaim{value: *a.generation, present: true}
	}
	key := m.ring.signer()
	payload, err := appendClaims(make([]byte, 0, 256), &c, m.audience[a.kind])
	if err != nil {
		return "", "", fmt.Errorf("nmauth: sign token: %w", err)
	}
	// The compact JWS golang-jwt's SignedString makes, with the header
	// encoded once per key rather than marshalled from a map per token,
	// written into one buffer.
	enc := base64.RawURLEncoding
	n := len(key.header) + 1 + enc.EncodedLen(len(payload))
	tok := make([]byte, n+1+enc.EncodedLen(sha256.Size))
	copy(tok, key.header)
	tok[len(key.header)] = '.'
	enc.Encode(tok[len(key.header)+1:n], payload)
	sig := key.signJWT(a.kind, tok[:n])
	tok[n] = '.'
	enc.Encode(tok[n+1:], sig[:])
	// tok is not written again: the string shares its bytes.
	return unsafe.String(unsafe.SliceData(tok), len(tok)), jti, nil
}

// maxClockSkew is how far ahead of this replica's clock a token's iat may
// be, the drift tolerated between replicas. A token from further ahead
// would live past its kind's lifetime counted from now; revocation does
// not depend on it, since the generation decides that.
const maxClockSkew = 5 * time.Second

// tokenVerifier checks tokens of one set of kinds. The kinds it accepts are
// fixed when it is built, so no call can widen them.
type tokenVerifier struct {
	parser  *jwt.Parser
	keyFunc jwt.Keyfunc
	now     func() time.Time
	ttl     [numKinds]time.Duration
}

func newTokenVerifier(ring *keyRing, issuer string, now func() time.Time, ttl [numKinds]time.Duration, accept ...tokenKind) *tokenVerifier {
	auds := make([]string, len(accept))
	for i, k := range accept {
		auds[i] = kindAudience[k]
	}
	v := &tokenVerifier{
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
			jwt.WithExpirationRequired(),
			jwt.WithIssuer(issuer),
			jwt.WithAudience(auds...),
			jwt.WithTimeFunc(now),
			jwt.WithStrictDecoding(),
		),
		now: now,
		ttl: ttl,
	}
	v.keyFunc = func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		key := ring.byID(kid)
		if key == nil {
			return nil, errors.New("nmauth: unknown key id")
		}
		kind, ok := kindOf(t.Claims.(*claims))
		if !ok || !containsKind(accept, kind) {
			return nil, errTokenKind
		}
		return key.jwt[kind], nil
	}
	return v
}

// verify checks a token's signature, algorithm, issuer, audience and
// lifetime, and returns its claims and kind. A token is also refused if it
// claims to be from the future or to live longer than its kind does: only
// a holder of the root secret or a replica with a wrong clock makes those.
func (v *tokenVerifier) verify(token string) (*claims, tokenKind, error) {
	c := &claims{}
	if _, err := v.parser.ParseWithClaims(token, c, v.keyFunc); err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	kind, ok := kindOf(c)
	if !ok || c.Subject == "" || c.ID == "" || c.IssuedAt.IsZero() {
		return nil, 0, ErrUnauthenticated
	}
	if kind == kindNode && c.Network == "" {
		return nil, 0, ErrUnauthenticated
	}
	if kind != kindNode && !c.Generation.present {
		return nil, 0, ErrUnauthenticated
	}
	if c.IssuedAt.After(v.now().Add(maxClockSkew)) || c.ExpiresAt.Sub(c.IssuedAt.Time) > v.ttl[kind] {
		return nil, 0, ErrUnauthenticated
	}
	return c, kind, nil
}

// kindOf reads a token's kind from its single audience.
func kindOf(c *claims) (tokenKind, bool) {
	if len(c.Audience) != 1 {
		return 0, false
	}
	for k, aud := range kindAudience {
		if c.Audience[0] == aud {
			return tokenKind(k), true
		}
	}
	return 0, false
}

func containsKind(kinds []tokenKind, k tokenKind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}

// enrollmentSignature binds an otpauth URL to one user at one generation
// of the account until an expiry (see internal/rootkey).
func (k *ringKey) enrollmentSignature(username, url string, gen uint64, expires time.Time) string {
	return rootkey.EnrollmentSignature(k.enroll, k.id, username, url, gen, expires)
}

// checkEnrollment verifies a signature made by enrollmentSignature for the
// account's current generation.
func (r *keyRing) checkEnrollment(username, url, sig string, gen uint64, now time.Time) bool {
	return rootkey.CheckEnrollment(username, url, sig, gen, now, func(id string) []byte {
		if k := r.byID(id); k != nil {
			return k.enroll
		}
		return nil
	})
}

// sealTOTP encrypts a TOTP secret with AES-256-GCM under the newest key,
// bound to the username (see internal/rootkey).
func (r *keyRing) sealTOTP(rnd io.Reader, username string, secret []byte) ([]byte, error) {
	k := r.signer()
	return rootkey.Seal(k.seal, k.id, rnd, username, secret)
}

// sealedBySigner reports whether a sealed secret is under the newest key.
func (r *keyRing) sealedBySigner(sealed []byte) bool {
	return rootkey.SealedKeyID(sealed) == r.signer().id
}

// openTOTP decrypts a secret sealed by sealTOTP under any key of the ring.
func (r *keyRing) openTOTP(username string, sealed []byte) ([]byte, error) {
	return rootkey.Open(username, sealed, func(id string) cipher.AEAD {
		if k := r.byID(id); k != nil {
			return k.seal
		}
		return nil
	})
}
