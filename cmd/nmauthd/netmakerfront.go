package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/sso"
)

// netmakerHostTTL is the lifetime of Netmaker's host tokens, which its
// server gives them and nmauthd may only shorten.
const netmakerHostTTL = 15 * time.Minute

// frontNetmaker sets cfg up to serve in front of an unchanged Netmaker
// when --netmaker-db names its database: the Store reads Netmaker's
// accounts live over db, tokens are minted in Netmaker's format under its
// secret, with its lifetimes (a user token's by the client that logs in,
// see userTokenLifetime) or the shorter ones of --user-token-ttl and
// --host-token-ttl, and node membership is Netmaker's nodes. Without
// --netmaker-db it sets only the lifetimes and returns nil.
func frontNetmaker(ctx context.Context, o *options, db *database, secrets [][]byte, cfg *nmauth.Config, log *slog.Logger) (*netmakerStore, error) {
	if o.hostTTL < 0 || o.userTokenTTL < 0 || o.hostTTL > netmakerHostTTL {
		return nil, errors.New("--user-token-ttl and --host-token-ttl are positive, and a host token lives at most 15m")
	}
	cfg.UserTokenTTL, cfg.HostTokenTTL = o.userTokenTTL, o.hostTTL
	if o.netmakerDB == "" {
		return nil, nil
	}
	if cfg.Wire != nmauth.WireNetmaker {
		return nil, errors.New("--netmaker-db serves Netmaker's clients: give --wire netmaker")
	}
	if o.ssoCreateUsers {
		return nil, errors.New("--sso-create-users: with --netmaker-db, users are made in Netmaker; single sign-on logs in the Netmaker user of the identity's e-mail")
	}
	nm, err := openNetmakerLive(ctx, o.netmakerDB)
	if err != nil {
		return nil, err
	}
	secret, err := nm.jwtSecret(ctx)
	var ttls netmakerUserTTLs
	if err == nil {
		ttls, err = nm.userTokenTTLs(ctx)
	}
	var live *netmakerStore
	if err == nil {
		live, err = newNetmakerStore(ctx, db, nm, secrets)
	}
	if err != nil {
		nm.close()
		return nil, err
	}
	// Each user token lives as Netmaker's settings say for the client
	// that logs in, read at each login; --user-token-ttl caps them.
	cfg.UserTokenTTL = netmakerLongestUserTTL
	if o.userTokenTTL > 0 {
		cfg.UserTokenTTL = min(o.userTokenTTL, netmakerLongestUserTTL)
	}
	cfg.UserTokenLifetime = nm.userTokenLifetime
	if cfg.HostTokenTTL == 0 {
		cfg.HostTokenTTL = netmakerHostTTL
	}
	cfg.Store = live
	cfg.NetmakerSecret = secret
	cfg.NetmakerUser = nm.lastUser
	cfg.NodeMember = nm.isMember
	log.Info("in front of Netmaker: its accounts are read live, its tokens signed with its secret",
		"netmaker_db", nm.name,
		"user_token_ttl_clients", min(ttls.Clients, cfg.UserTokenTTL).String(),
		"user_token_ttl_ui", min(ttls.UI, cfg.UserTokenTTL).String(),
		"user_token_ttl_max", cfg.UserTokenTTL.String(),
		"host_token_ttl", cfg.HostTokenTTL.String())
	return live, nil
}

// ssoUser is the sso.Config.FindUser of the live mode: the Netmaker user
// that Netmaker's own single sign-on made for the identity (its
// external_identity_provider_id is the identity's subject), else the one
// named by the identity's e-mail, when the provider verified it, as
// Netmaker names the users its single sign-on makes.
func (s *netmakerStore) ssoUser(ctx context.Context, id sso.Identity) (string, error) {
	key, found, err := s.nm.userByExternalID(ctx, id.Subject)
	if err != nil || !found {
		if err != nil || !id.EmailVerified || id.Email == "" {
			return "", err
		}
		key = id.Email
	}
	name, err := nmauth.PrepareUsername(key)
	if err != nil {
		return "", nil
	}
	if _, found, err = s.nm.user(ctx, name); err != nil || !found {
		return "", err
	}
	return name, nil
}

// serves tells s the Authenticator over it.
func (s *netmakerStore) serves(a *nmauth.Authenticator) {
	if s != nil {
		s.auth.Store(a)
	}
}

// close closes Netmaker's database; a nil s has none.
func (s *netmakerStore) close() {
	if s != nil {
		s.nm.close()
	}
}
