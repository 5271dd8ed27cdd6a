package nmauth

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// A Netmaker token is a user or host token in the format of Netmaker
// v1.4.0's own server, signed with that server's secret
// ([Config.NetmakerSecret]), so that an unchanged Netmaker server behind
// the same address accepts it on every route, with the rights it gives
// the account. Nothing else mints one: the Authenticator does, and only
// for a login it granted itself.
//
// A user token carries what Netmaker's user login writes (models.UserClaims:
// UserName, Role, TokenType "user_id_token", issuer "Netmaker", subject
// "user|NAME"), a host token what its host login writes (models.Claims:
// ID, MacAddress, an empty Network, subject "node|ID"); both also carry a
// token id and the account's generation, which Netmaker ignores and the
// bearer check of this Authenticator requires, so that a token Netmaker
// minted itself is never a session here. Pre-auth and node tokens keep
// this package's own format: Netmaker never sees them.

// netmakerIssuer is the iss claim of Netmaker's tokens.
const netmakerIssuer = "Netmaker"

// netmakerUserTokenType is Netmaker's TokenType of a login's user token;
// its access tokens ("access_token") stay Netmaker's.
const netmakerUserTokenType = "user_id_token"

// netmakerClaims is the payload of a Netmaker token: models.UserClaims and
// models.Claims in one, which Netmaker writes without JSON tags, with the
// gen and totp claims of this package beside them.
type netmakerClaims struct {
	// User token.
	Role           string `json:"Role,omitempty"`
	UserName       string `json:"UserName,omitempty"`
	Api            string `json:"Api,omitempty"`
	TokenType      string `json:"TokenType,omitempty"`
	RacAutoDisable bool   `json:"RacAutoDisable,omitempty"`
	// Host token.
	HostID     string `json:"ID,omitempty"`
	MacAddress string `json:"MacAddress,omitempty"`
	Network    string `json:"Network,omitempty"`

	jwt.RegisteredClaims
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
	f.parser = jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuer(netmakerIssuer),
		jwt.WithTimeFunc(cfg.Now),
	)
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
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    netmakerIssuer,
			IssuedAt:  jwt.NewNumericDate(iat),
			ExpiresAt: jwt.NewNumericDate(iat.Add(a.ttl)),
			ID:        jti,
		},
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
		c.UserName, c.Role, c.TokenType = name, role, netmakerUserTokenType
		c.Subject = "user|" + name
	case kindHost:
		c.HostID, c.MacAddress = a.subject, a.mac
		c.Subject = "node|" + a.subject
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
	if !c.Generation.present || c.ID == "" || c.IssuedAt == nil || len(c.Audience) > 0 || c.Network != "" {
		return Principal{}, ErrUnauthenticated
	}
	p := Principal{TOTP: c.TOTP, IssuedAt: c.IssuedAt.Time, ExpiresAt: c.ExpiresAt.Time, TokenID: c.ID, generation: c.Generation}
	var kind tokenKind
	switch subject, isUser := strings.CutPrefix(c.Subject, "user|"); {
	case isUser && c.TokenType == netmakerUserTokenType && subject == c.UserName && c.HostID == "" && c.MacAddress == "":
		name, err := PrepareUsername(c.UserName)
		if err != nil {
			return Principal{}, ErrUnauthenticated
		}
		kind, p.Kind, p.Name = kindUser, KindUser, name
	case c.Subject == "node|"+c.HostID && c.HostID != "" && c.UserName == "" && c.TokenType == "" && c.Role == "":
		id, err := PrepareHostID(c.HostID)
		if err != nil {
			return Principal{}, ErrUnauthenticated
		}
		kind, p.Kind, p.Name = kindHost, KindHost, id
	default:
		return Principal{}, ErrUnauthenticated
	}
	if p.IssuedAt.After(f.now().Add(maxClockSkew)) || p.ExpiresAt.Sub(p.IssuedAt) > f.ttl[kind] {
		return Principal{}, ErrUnauthenticated
	}
	return p, nil
}
