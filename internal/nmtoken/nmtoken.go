// Package nmtoken holds the claims of a user or host token in the format
// of Netmaker v1.4.0's own server, so that an unchanged Netmaker server
// accepts the tokens nmauth mints for it. A user token carries what
// Netmaker's user login writes (models.UserClaims: UserName, Role,
// TokenType "user_id_token", issuer "Netmaker", subject "user|NAME"), a
// host token what its host login writes (models.Claims: ID, MacAddress,
// an empty Network, subject "node|ID"). The package knows nothing of the
// Authenticator: its caller adds its own claims beside these, mints, and
// decides what a token it parsed grants.
package nmtoken

import (
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
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
