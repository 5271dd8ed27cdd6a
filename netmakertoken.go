package nmauth

import (
	"errors"
	"fmt"
	"time"

	"github.com/nmauth/nmauth/internal/nmtoken"
	"github.com/nmauth/nmauth/internal/rootkey"
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

// netmakerFormat mints and checks tokens in Netmaker's format.
type netmakerFormat struct{ *nmtoken.Format }

// newNetmakerFormat returns the format of cfg's Netmaker tokens, or nil
// when cfg sets no NetmakerSecret.
func newNetmakerFormat(cfg *Config, ttl [numKinds]time.Duration) (*netmakerFormat, error) {
	if cfg.NetmakerSecret == nil {
		if cfg.NetmakerUser != nil {
			return nil, errors.New("nmauth: Config.NetmakerUser is set without Config.NetmakerSecret")
		}
		return nil, nil
	}
	if len(cfg.NetmakerSecret) < rootkey.MinSecretLen {
		return nil, fmt.Errorf("nmauth: Config.NetmakerSecret is %d bytes, need at least %d", len(cfg.NetmakerSecret), rootkey.MinSecretLen)
	}
	if cfg.NetmakerUser == nil {
		return nil, errors.New("nmauth: Config.NetmakerUser is required with Config.NetmakerSecret")
	}
	return &netmakerFormat{nmtoken.NewFormat(cfg.NetmakerSecret, cfg.NetmakerUser, cfg.Rand, cfg.Now,
		ttl[kindUser], ttl[kindHost], ErrUnauthenticated)}, nil
}

// mint signs a user or host token as Netmaker's server signs its own.
func (f *netmakerFormat) mint(a mintArgs) (token, jti string, err error) {
	t := nmtoken.Token{User: a.kind == kindUser, Name: a.subject, MAC: a.mac, TOTP: a.totp, IssuedAt: a.issuedAt}
	if a.generation != nil {
		t.Generation = generationClaim{Value: *a.generation, Present: true}
	}
	return f.Mint(t, a.ttl)
}

// verify checks a Netmaker token that this Authenticator minted (see
// nmtoken.Format.Verify) and returns its principal.
func (f *netmakerFormat) verify(token string) (Principal, error) {
	t, err := f.Verify(token)
	if err != nil {
		return Principal{}, err
	}
	p := Principal{Kind: KindHost, TOTP: t.TOTP, IssuedAt: t.IssuedAt, ExpiresAt: t.ExpiresAt, TokenID: t.ID, generation: t.Generation}
	if t.User {
		p.Kind = KindUser
		p.Name, err = PrepareUsername(t.Name)
	} else {
		p.Name, err = PrepareHostID(t.Name)
	}
	if err != nil {
		return Principal{}, ErrUnauthenticated
	}
	return p, nil
}
