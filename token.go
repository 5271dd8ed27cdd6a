package nmauth

import (
	"crypto/aes"
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
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/crypto/hkdf"
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

func (t issuedAt) MarshalJSON() ([]byte, error) { return t.appendJSON(nil), nil }

func (t issuedAt) appendJSON(b []byte) []byte {
	b = strconv.AppendInt(b, t.Unix(), 10)
	ns := strconv.AppendUint(make([]byte, 0, 9), uint64(t.Nanosecond()), 10)
	b = append(b, "."...)
	b = append(b, "000000000"[len(ns):]...)
	return append(b, ns...)
}

// appendClaims appends c as JSON, the bytes encoding/json writes for it
// (a test holds the two equal), with aud, c.Audience already encoded.
// It is written out because minting is on the path of every login:
// encoding/json's reflection, and the MarshalJSON of jwt.ClaimStrings that
// calls it again, cost more than the rest of the token and grew each
// login's stack past its first size.
func appendClaims(b []byte, c *claims, aud []byte) ([]byte, error) {
	b = append(b, '{')
	open := len(b)
	field := func(b []byte, name string) []byte {
		if len(b) > open {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		return append(b, '"', ':')
	}
	if c.Issuer != "" {
		b = appendJSONString(field(b, "iss"), c.Issuer)
	}
	if c.Subject != "" {
		b = appendJSONString(field(b, "sub"), c.Subject)
	}
	if len(c.Audience) > 0 {
		b = append(field(b, "aud"), aud...)
	}
	for _, d := range []struct {
		name string
		date *jwt.NumericDate
	}{{"exp", c.ExpiresAt}, {"nbf", c.NotBefore}} {
		if d.date == nil {
			continue
		}
		if jwt.TimePrecision >= time.Second {
			// What MarshalJSON writes then, without its allocations.
			b = strconv.AppendInt(field(b, d.name), d.date.Truncate(jwt.TimePrecision).Unix(), 10)
			continue
		}
		v, err := d.date.MarshalJSON()
		if err != nil {
			return nil, err
		}
		b = append(field(b, d.name), v...)
	}
	if c.ID != "" {
		b = appendJSONString(field(b, "jti"), c.ID)
	}
	b = c.IssuedAt.appendJSON(field(b, "iat"))
	if c.Network != "" {
		b = appendJSONString(field(b, "net"), c.Network)
	}
	if c.TOTP {
		b = append(field(b, "totp"), "true"...)
	}
	if c.Generation.present {
		b = strconv.AppendUint(field(b, "gen"), c.Generation.value, 10)
	}
	return append(b, '}'), nil
}

// appendJSONString appends s as a JSON string, as encoding/json writes
// it: printable ASCII but for the characters it escapes is copied, and
// anything else goes through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func (t *issuedAt) UnmarshalJSON(b []byte) error {
	sec, frac, _ := strings.Cut(string(b), ".")
	n, err := strconv.ParseUint(sec, 10, 63)
	if err != nil || len(frac) > 9 {
		return errors.New("nmauth: malformed iat")
	}
	var ns uint64
	if frac != "" {
		if ns, err = strconv.ParseUint(frac+strings.Repeat("0", 9-len(frac)), 10, 64); err != nil {
			return errors.New("nmauth: malformed iat")
		}
	}
	t.Time = time.Unix(int64(n), int64(ns))
	return nil
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
	k.id = hex.EncodeToString(subkey(secret, "nmauth key id", 8))
	k.check = hex.EncodeToString(subkey(secret, "nmauth key check", 32))
	for kind := range numKinds {
		k.jwt[kind] = subkey(secret, "nmauth jwt "+kindAudience[kind], 32)
	}
	k.enroll = subkey(secret, "nmauth enrollment signature", 32)
	k.machine = subkey(secret, "nmauth machine secret", 32)
	header, err := json.Marshal(map[string]string{"alg": jwt.SigningMethodHS256.Alg(), "kid": k.id, "typ": "JWT"})
	if err != nil {
		return nil, err
	}
	k.header = base64.RawURLEncoding.EncodeToString(header)
	block, err := aes.NewCipher(subkey(secret, "nmauth totp seal", 32))
	if err != nil {
		return nil, err
	}
	if k.seal, err = cipher.NewGCM(block); err != nil {
		return nil, err
	}
	return k, nil
}

// subkey derives n bytes for one purpose from a root secret with HKDF.
func subkey(secret []byte, purpose string, n int) []byte {
	out := make([]byte, n)
	if _, err := io.ReadFull(hkdf.New(sha256.New, secret, nil, []byte(purpose)), out); err != nil {
		panic("nmauth: hkdf: " + err.Error()) // unreachable for n <= 255*32
	}
	return out
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
func (r *keyRing) sealedKeyID(sealed []byte) string {
	if len(sealed) < 9 {
		return ""
	}
	return hex.EncodeToString(sealed[1:9])
}

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
// of the account until an expiry, so that a revoking change (a new
// password, a disable) kills a pending enrollment. Its form is
// "<expiry unix>.<key id>.<base64url HMAC-SHA256>".
func (k *ringKey) enrollmentSignature(username, url string, gen uint64, expires time.Time) string {
	exp := expires.Unix()
	return fmt.Sprintf("%d.%s.%s", exp, k.id, base64.RawURLEncoding.EncodeToString(k.enrollmentMAC(username, url, gen, exp)))
}

func (k *ringKey) enrollmentMAC(username, url string, gen uint64, exp int64) []byte {
	m := hmac.New(sha256.New, k.enroll)
	// Length-prefixed fields so no two inputs share an encoding.
	fmt.Fprintf(m, "nmauth-enrollment-v2|%d:%s|%d:%s|%d|%d", len(username), username, len(url), url, gen, exp)
	return m.Sum(nil)
}

// checkEnrollment verifies a signature made by enrollmentSignature for the
// account's current generation.
func (r *keyRing) checkEnrollment(username, url, sig string, gen uint64, now time.Time) bool {
	parts := strings.SplitN(sig, ".", 3)
	if len(parts) != 3 {
		return false
	}
	exp, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil || strconv.FormatInt(exp, 10) != parts[0] {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return false
	}
	key := r.byID(parts[1])
	if key == nil || !now.Before(time.Unix(exp, 0)) {
		return false
	}
	return hmac.Equal(got, key.enrollmentMAC(username, url, gen, exp))
}

// sealedVersion prefixes every sealed TOTP secret.
const sealedVersion = 1

// sealTOTP encrypts a TOTP secret with AES-256-GCM under the newest key,
// with the username as additional data so a sealed secret cannot be moved
// to another user. Layout: version | key id (8) | nonce | ciphertext.
func (r *keyRing) sealTOTP(rnd io.Reader, username string, secret []byte) ([]byte, error) {
	k := r.signer()
	kid, _ := hex.DecodeString(k.id)
	nonce := make([]byte, k.seal.NonceSize())
	if _, err := io.ReadFull(rnd, nonce); err != nil {
		return nil, fmt.Errorf("nmauth: seal nonce: %w", err)
	}
	out := append([]byte{sealedVersion}, kid...)
	out = append(out, nonce...)
	return k.seal.Seal(out, nonce, secret, []byte(username)), nil
}

// sealedBySigner reports whether a sealed secret is under the newest key.
func (r *keyRing) sealedBySigner(sealed []byte) bool {
	return len(sealed) >= 9 && hex.EncodeToString(sealed[1:9]) == r.signer().id
}

// openTOTP decrypts a secret sealed by sealTOTP under any key of the ring.
func (r *keyRing) openTOTP(username string, sealed []byte) ([]byte, error) {
	if len(sealed) < 1+8 || sealed[0] != sealedVersion {
		return nil, errors.New("nmauth: malformed sealed totp secret")
	}
	key := r.byID(hex.EncodeToString(sealed[1:9]))
	if key == nil {
		return nil, errors.New("nmauth: sealed totp secret uses an unknown key")
	}
	rest := sealed[9:]
	ns := key.seal.NonceSize()
	if len(rest) < ns {
		return nil, errors.New("nmauth: malformed sealed totp secret")
	}
	secret, err := key.seal.Open(nil, rest[:ns], rest[ns:], []byte(username))
	if err != nil {
		return nil, fmt.Errorf("nmauth: open totp secret: %w", err)
	}
	return secret, nil
}
