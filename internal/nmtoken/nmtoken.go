// Package nmtoken holds the claims of a user or host token in the format
// of Netmaker v1.4.0's own server, so that an unchanged Netmaker server
// accepts the tokens nmauth mints for it. A user token carries what
// Netmaker's user login writes (models.UserClaims: UserName, Role,
// TokenType "user_id_token", issuer "Netmaker", subject "user|NAME"), a
// host token what its host login writes (models.Claims: ID, MacAddress,
// an empty Network, subject "node|ID"), and both nmauth's gen and totp
// claims beside them. The package knows nothing of the Authenticator: its
// caller names the account and decides what a token it parsed grants.
package nmtoken

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/nmauth/nmauth/internal/jwtkind"
)

// Issuer is the iss claim of Netmaker's tokens.
const Issuer = "Netmaker"

// UserTokenType is Netmaker's TokenType of a login's user token; its
// access tokens ("access_token") stay Netmaker's.
const UserTokenType = "user_id_token"

// Claims is the payload of a Netmaker token: models.UserClaims and
// models.Claims in one, which Netmaker writes without JSON tags.
type Claims struct {
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
}

// NewParser returns the parser of Netmaker's tokens: HS256 only, an
// expiry required, Netmaker's issuer, and now as the clock.
func NewParser(now func() time.Time) *jwt.Parser {
	return jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuer(Issuer),
		jwt.WithTimeFunc(now),
	)
}

// SetUser makes c the user token of name, of Netmaker's role role.
func (c *Claims) SetUser(name, role string) {
	c.UserName, c.Role, c.TokenType = name, role, UserTokenType
	c.Subject = "user|" + name
}

// SetHost makes c the host token of id, with its MAC address mac.
func (c *Claims) SetHost(id, mac string) {
	c.HostID, c.MacAddress = id, mac
	c.Subject = "node|" + id
}

// Account tells whose token c is by its shape: a user's name, with user
// set, or a host's id. It reports false for any other shape: one with an
// audience (Netmaker's pre-auth tokens), one naming a network, one that
// claims both kinds or whose subject is not its account.
func (c *Claims) Account() (name string, user, ok bool) {
	if len(c.Audience) > 0 || c.Network != "" {
		return "", false, false
	}
	switch subject, isUser := strings.CutPrefix(c.Subject, "user|"); {
	case isUser && c.TokenType == UserTokenType && subject == c.UserName && c.HostID == "" && c.MacAddress == "":
		return c.UserName, true, true
	case c.Subject == "node|"+c.HostID && c.HostID != "" && c.UserName == "" && c.TokenType == "" && c.Role == "":
		return c.HostID, false, true
	}
	return "", false, false
}

// Token is what a Netmaker token of nmauth's says.
type Token struct {
	// User tells a user token from a host token.
	User bool
	// Name is the user's name as Netmaker knows it, or the host's id.
	Name string
	// Role is the user's Netmaker role; MAC the host's MAC address.
	Role, MAC string
	TOTP      bool
	// ID is the token's jti.
	ID                  string
	IssuedAt, ExpiresAt time.Time
	Generation          jwtkind.Generation
}

// claims is the payload of a Netmaker token, with nmauth's gen and totp
// claims beside Netmaker's.
type claims struct {
	Claims
	Generation jwtkind.Generation `json:"gen,omitzero"`
	TOTP       bool               `json:"totp,omitempty"`
}

// Format mints and checks tokens in Netmaker's format under one secret.
type Format struct {
	secret []byte
	// user names a user as Netmaker knows it, with its role.
	user   func(username string) (name, role string, err error)
	rand   io.Reader
	parser *jwt.Parser
	now    func() time.Time
	// userTTL and hostTTL are the longest lifetimes of the two kinds.
	userTTL, hostTTL time.Duration
	// refused is the error of a token that does not verify.
	refused error
}

// ErrNoUser fails the mint of a user token whose Netmaker name is empty.
var ErrNoUser = errors.New("nmauth: Config.NetmakerUser named no user")

// NewFormat returns the format of tokens signed with secret, whose users
// user names, with ids read from rand, checked by the clock now against
// the longest lifetimes of a user and a host token. A token that does not
// verify fails with refused, which wraps the parser's error if there is
// one.
func NewFormat(secret []byte, user func(username string) (name, role string, err error), rand io.Reader,
	now func() time.Time, userTTL, hostTTL time.Duration, refused error) *Format {
	return &Format{secret: append([]byte(nil), secret...), user: user, rand: rand, parser: NewParser(now), now: now,
		userTTL: userTTL, hostTTL: hostTTL, refused: refused}
}

// Mint signs t, valid for ttl from its IssuedAt, as Netmaker's server
// signs its own tokens, and returns it with the jti it drew. The Name of
// a user token is nmauth's, which Mint has the user function name as
// Netmaker knows it. Netmaker's clock reads iat in whole seconds and
// refuses one ahead of it, so iat is cut to the second.
func (f *Format) Mint(t Token, ttl time.Duration) (token, jti string, err error) {
	if jti, err = jwtkind.NewID(f.rand); err != nil {
		return "", "", err
	}
	if t.User {
		username := t.Name
		if t.Name, t.Role, err = f.user(username); err != nil {
			return "", "", fmt.Errorf("nmauth: Netmaker's claims of user %q: %w", username, err)
		}
		if t.Name == "" {
			return "", "", ErrNoUser
		}
	}
	iat := t.IssuedAt.Truncate(time.Second)
	c := claims{
		Claims: Claims{RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    Issuer,
			IssuedAt:  jwt.NewNumericDate(iat),
			ExpiresAt: jwt.NewNumericDate(iat.Add(ttl)),
			ID:        jti,
		}},
		Generation: t.Generation,
		TOTP:       t.TOTP,
	}
	if t.User {
		c.SetUser(t.Name, t.Role)
	} else {
		c.SetHost(t.Name, t.MAC)
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(f.secret)
	if err != nil {
		return "", "", fmt.Errorf("nmauth: sign token: %w", err)
	}
	return tok, jti, nil
}

// Verify checks a Netmaker token that nmauth minted: its signature under
// the secret, issuer and lifetime, and its shape, which tells a user token
// from a host token and refuses everything else: a token without the gen
// claim (one Netmaker minted itself, such as its access tokens), one with
// an audience (Netmaker's pre-auth tokens), or one that claims both kinds.
// A token is also refused if it claims to be from the future or to live
// longer than its kind does.
func (f *Format) Verify(token string) (Token, error) {
	c := &claims{}
	if _, err := f.parser.ParseWithClaims(token, c, func(*jwt.Token) (any, error) { return f.secret, nil }); err != nil {
		return Token{}, fmt.Errorf("%w: %w", f.refused, err)
	}
	if !c.Generation.Present || c.ID == "" || c.IssuedAt == nil {
		return Token{}, f.refused
	}
	name, user, ok := c.Account()
	if !ok {
		return Token{}, f.refused
	}
	t := Token{User: user, Name: name, TOTP: c.TOTP, ID: c.ID, IssuedAt: c.IssuedAt.Time, ExpiresAt: c.ExpiresAt.Time, Generation: c.Generation}
	ttl := f.hostTTL
	if user {
		ttl = f.userTTL
	}
	if t.IssuedAt.After(f.now().Add(jwtkind.MaxClockSkew)) || t.ExpiresAt.Sub(t.IssuedAt) > ttl {
		return Token{}, f.refused
	}
	return t, nil
}
