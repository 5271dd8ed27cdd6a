package nmauth

import (
	"crypto/sha256"
	"io"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/nmauth/nmauth/internal/jwtkind"
	"github.com/nmauth/nmauth/internal/rootkey"
)

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

// The key ring of the root secrets lives in internal/rootkey.
type (
	ringKey = rootkey.Key
	keyRing = rootkey.Ring
)

// newKeyRing derives the keys of the root secrets, with a JWT key for
// each kind of token.
func newKeyRing(secrets [][]byte) (*keyRing, error) {
	return rootkey.NewRing(secrets, jwtkind.Audience[:])
}

// principalKinds is the kind of principal of each kind of token the
// bearer check accepts.
var principalKinds = [numKinds]PrincipalKind{kindUser: KindUser, kindHost: KindHost, kindNode: KindNode}

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
	key := m.ring.Signer()
	token, err = jwtkind.Sign(key.Header, &c, a.kind, func(signing []byte) [sha256.Size]byte { return key.SignJWT(int(a.kind), signing) })
	return token, jti, err
}

// newTokenVerifier returns the verifier of the tokens of the kinds accept
// signed by any key of ring.
func newTokenVerifier(ring *keyRing, issuer string, now func() time.Time, ttl [numKinds]time.Duration, accept ...tokenKind) *tokenVerifier {
	return jwtkind.NewVerifier(issuer, now, ttl, ErrUnauthenticated, func(kid string) *[numKinds][]byte {
		if k := ring.ByID(kid); k != nil {
			return (*[numKinds][]byte)(k.JWT)
		}
		return nil
	}, accept...)
}
