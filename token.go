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
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/nmauth/nmauth/internal/jwtkind"
	"github.com/nmauth/nmauth/internal/rootkey"
)

// minSecretLen is the least number of bytes a root secret may have.
const minSecretLen = 32

// The kinds of JWT and their claims live in internal/jwtkind.
type (
	tokenKind       = jwtkind.Kind
	claims          = jwtkind.Claims
	generationClaim = jwtkind.Generation
	tokenVerifier   = jwtkind.Verifier
)

const (
	kindUser    = jwtkind.User
	kindPreAuth = jwtkind.PreAuth
	kindHost    = jwtkind.Host
	kindNode    = jwtkind.Node
	numKinds    = jwtkind.Count
)

// principalKinds is the kind of principal of each kind of token the
// bearer check accepts.
var principalKinds = [numKinds]PrincipalKind{kindUser: KindUser, kindHost: KindHost, kindNode: KindNode}

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
		k.jwt[kind] = rootkey.Subkey(secret, "nmauth jwt "+jwtkind.Audience[kind], 32)
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
	// netmaker, when set, mints the user and host tokens in Netmaker's
	// format (see [Config.NetmakerSecret]).
	netmaker *netmakerFormat
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
	if jti, err = jwtkind.NewID(m.rand); err != nil {
		return "", "", err
	}
	c := claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    m.issuer,
			Subject:   a.subject,
			Audience:  jwt.ClaimStrings{jwtkind.Audience[a.kind]},
			ExpiresAt: jwt.NewNumericDate(a.issuedAt.Add(a.ttl)),
			ID:        jti,
		},
		IssuedAt: jwtkind.IssuedAt{Time: a.issuedAt},
		Network:  a.network,
		TOTP:     a.totp,
	}
	if a.generation != nil {
		c.Generation = generationClaim{Value: *a.generation, Present: true}
	}
	key := m.ring.signer()
	token, err = jwtkind.Sign(key.header, &c, a.kind, func(signing []byte) [sha256.Size]byte { return key.signJWT(a.kind, signing) })
	return token, jti, err
}

// newTokenVerifier returns the verifier of the tokens of the kinds accept
// signed by any key of ring.
func newTokenVerifier(ring *keyRing, issuer string, now func() time.Time, ttl [numKinds]time.Duration, accept ...tokenKind) *tokenVerifier {
	return jwtkind.NewVerifier(issuer, now, ttl, ErrUnauthenticated, func(kid string) *[numKinds][]byte {
		if k := ring.byID(kid); k != nil {
			return &k.jwt
		}
		return nil
	}, accept...)
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
