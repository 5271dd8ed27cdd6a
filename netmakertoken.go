package nmauth

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/nmauth/nmauth/internal/nmtoken"
)

// A Netmaker token is a user or host token in the format of Netmaker
// v1.4.0's own server (see package nmtoken), signed with that server's
// secret ([Config.NetmakerSecret]), so that an unchanged Netmaker server
// behind the same address accepts it on every route, with the rights it
// gives the account. Nothing else mints one: the Authenticator does, and
// only for a login it granted itself.
//
// Both kinds also carry a token id and the account's generation, which
// Netmaker ignores and the bearer check of this Authenticator requires,
// so that a token Netmaker minted itself is never a session here.
// Pre-auth and node tokens keep this package's own format: Netmaker never
// sees them.

// netmakerClaims is the payload of a Netmaker token, with the gen and
// totp claims of this package beside Netmaker's.
type netmakerClaims struct {
	nmtoken.Claims
	Generation generationClaim `json:"gen,omitzero"`
	TOTP       bool            `json:"totp,omitempty"`
}

// netmakerFormat mints and checks tokens in Netmaker's format.
type netmakerFormat struct {
	secret []byte
	user   func(username string) (name, role string, err error)
	rand   io.Reader
	parser *jwt.Parser
	now    func() time.Time
	ttl    [numKinds]time.Duration
}

// errNetmakerUser fails a login whose Netmaker claims could not be named.
var errNetmakerUser = errors.New("nmauth: Config.NetmakerUser named no user")

// newNetmakerFormat returns the format of cfg's Netmaker tokens, or nil
// when cfg sets no NetmakerSecret.
func newNetmakerFormat(cfg *Config, ttl [numKinds]time.Duration) (*netmakerFormat, error) {
	if cfg.NetmakerSecret == nil {
		if cfg.NetmakerUser != nil {
			return nil, errors.New("nmauth: Config.NetmakerUser is set without Config.NetmakerSecret")
		}
		return nil, nil
	}
	if len(cfg.NetmakerSecret) < minSecretLen {
		return nil, fmt.Errorf("nmauth: Config.NetmakerSecret is %d bytes, need at least %d", len(cfg.NetmakerSecret), minSecretLen)
	}
	if cfg.NetmakerUser == nil {
		return nil, errors.New("nmauth: Config.NetmakerUser is required with Config.NetmakerSecret")
	}
	f := &netmakerFormat{secret: append([]byte(nil), cfg.NetmakerSecret...), user: cfg.NetmakerUser, rand: cfg.Rand, now: cfg.Now, ttl: ttl}
	f.parser = nmtoken.NewParser(cfg.Now)
	return f, nil
}

// mint signs a user or host token as Netmaker's server signs its own.
// Netmaker's clock reads iat in whole seconds and refuses one ahead of
// it, so iat is cut to the second.
func (f *netmakerFormat) mint(a mintArgs) (token, jti string, err error) {
	id := make([]byte, 16)
	if _, err := io.ReadFull(f.rand, id); err != nil {
		return "", "", fmt.Errorf("nmauth: token id: %w", err)
	}
	jti = base64.RawURLEncoding.EncodeToString(id)
	iat := a.issuedAt.Truncate(time.Second)
	c := netmakerClaims{
		Claims: nmtoken.Claims{RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    nmtoken.Issuer,
			IssuedAt:  jwt.NewNumericDate(iat),
			ExpiresAt: jwt.NewNumericDate(iat.Add(a.ttl)),
			ID:        jti,
		}},
		TOTP: a.totp,
	}
	if a.generation != nil {
		c.Generation = generationClaim{value: *a.generation, present: true}
	}
	switch a.kind {
	case kindUser:
		name, role, err := f.user(a.subject)
		if err != nil {
			return "", "", fmt.Errorf("nmauth: Netmaker's claims of user %q: %w", a.subject, err)
		}
		if name == "" {
			return "", "", errNetmakerUser
		}
		c.SetUser(name, role)
	case kindHost:
		c.SetHost(a.subject, a.mac)
	default:
		return "", "", fmt.Errorf("nmauth: no Netmaker format for token kind %d", a.kind)
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(f.secret)
	if err != nil {
		return "", "", fmt.Errorf("nmauth: sign token: %w", err)
	}
	return tok, jti, nil
}

// verify checks a Netmaker token that this Authenticator minted: its
// signature under Netmaker's secret, issuer and lifetime, and its shape,
// which tells a user token from a host token and refuses everything
// else: a token without the gen claim (one Netmaker minted itself, such
// as its access tokens), one with an audience (Netmaker's pre-auth
// tokens), or one that claims both kinds.
func (f *netmakerFormat) verify(token string) (Principal, error) {
	c := &netmakerClaims{}
	if _, err := f.parser.ParseWithClaims(token, c, func(*jwt.Token) (any, error) { return f.secret, nil }); err != nil {
		return Principal{}, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	if !c.Generation.present || c.ID == "" || c.IssuedAt == nil {
		return Principal{}, ErrUnauthenticated
	}
	p := Principal{TOTP: c.TOTP, IssuedAt: c.IssuedAt.Time, ExpiresAt: c.ExpiresAt.Time, TokenID: c.ID, generation: c.Generation}
	var kind tokenKind
	var err error
	switch name, user, ok := c.Account(); {
	case !ok:
		return Principal{}, ErrUnauthenticated
	case user:
		kind, p.Kind = kindUser, KindUser
		p.Name, err = PrepareUsername(name)
	default:
		kind, p.Kind = kindHost, KindHost
		p.Name, err = PrepareHostID(name)
	}
	if err != nil {
		return Principal{}, ErrUnauthenticated
	}
	if p.IssuedAt.After(f.now().Add(maxClockSkew)) || p.ExpiresAt.Sub(p.IssuedAt) > f.ttl[kind] {
		return Principal{}, ErrUnauthenticated
	}
	return p, nil
}
