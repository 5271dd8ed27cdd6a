package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/nmauth/nmauth/sso"
)

// envSSOClientSecret names the variable of the client secret at the
// OpenID provider, never a flag, which other users of the machine could
// read.
const envSSOClientSecret = "NMAUTH_SSO_CLIENT_SECRET"

// checkSSOFlags refuses, before anything starts, a single sign-on
// configuration that could not work: a flag of it without --sso-issuer, a
// missing client id or callback, or a confidential client without its
// secret (every login would fail at the provider, and only the provider's
// log would say why). A public client, which has no secret, is said with
// --sso-public-client.
func checkSSOFlags(o *options, getenv func(string) string) error {
	if o.ssoIssuer == "" {
		if o.ssoClientID != "" || o.ssoRedirectURL != "" || o.ssoPublicClient {
			return errors.New("--sso-client-id, --sso-redirect-url and --sso-public-client need --sso-issuer")
		}
		return nil
	}
	if o.ssoClientID == "" || o.ssoRedirectURL == "" {
		return errors.New("--sso-issuer needs --sso-client-id and --sso-redirect-url")
	}
	secret := getenv(envSSOClientSecret)
	switch {
	case secret == "" && !o.ssoPublicClient:
		return fmt.Errorf("--sso-issuer: the client secret is missing: set %s to the secret of client %q at the provider, "+
			"or give --sso-public-client for a public client, which has none (PKCE only)", envSSOClientSecret, o.ssoClientID)
	case secret != "" && o.ssoPublicClient:
		return fmt.Errorf("--sso-public-client: a public client has no secret, and %s is set", envSSOClientSecret)
	}
	return nil
}

// addSSORoutes serves single sign-on with the provider of --sso-issuer,
// when it is given, at /api/oauth/, and GET /api/oauth/enabled, which
// tells the demo page to show its button. The routes are served at once:
// while the provider's discovery has not worked they answer 503 with
// Retry-After, and it is retried in the background until ctx ends, so
// that an outage of the provider stops no other login.
func addSSORoutes(ctx context.Context, mux *http.ServeMux, b *backend, o *options, getenv func(string) string, log *slog.Logger) error {
	if o.ssoIssuer == "" {
		return nil
	}
	store, err := sso.NewSQLStore(ctx, b.db.db, b.db.dialect)
	if err != nil {
		return fmt.Errorf("single sign-on tables: %w", err)
	}
	var findUser func(context.Context, sso.Identity) (string, error)
	if b.netmaker != nil {
		findUser = b.netmaker.ssoUser
	}
	s, err := sso.Open(ctx, sso.Config{
		Extension: b.sso, Store: store, FindUser: findUser,
		Issuer: o.ssoIssuer, ClientID: o.ssoClientID, ClientSecret: getenv(envSSOClientSecret), PublicClient: o.ssoPublicClient,
		RedirectURL: o.ssoRedirectURL, CreateUsers: o.ssoCreateUsers,
		AllowedDomains: o.ssoDomains, RequiredGroup: o.ssoGroup,
		OnLogin: func(ctx context.Context, id sso.Identity) error {
			log.InfoContext(ctx, "sso login", "issuer", id.Issuer, "subject", id.Subject, "user", id.UserName)
			return nil
		},
		Logger: log,
	})
	if err != nil {
		return err
	}
	mux.Handle("/api/oauth/", s.Handler())
	mux.HandleFunc("GET /api/oauth/enabled", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNoContent)
	})
	log.Info("single sign-on configured; its routes serve logins once the provider has been discovered",
		"issuer", o.ssoIssuer, "public_client", o.ssoPublicClient, "create_users", o.ssoCreateUsers)
	return nil
}

// userSSOLink links an identity of an OpenID provider to an existing user,
// so that its single sign-on logs in as that user: the issuer as the
// provider names itself, and the identity's subject there.
func userSSOLink(ctx context.Context, c *cli, o *options, args []string) error {
	name, issuer, subject := args[0], args[1], args[2]
	return c.withBackend(ctx, o, func(b *backend) error {
		info, err := b.auth.Admin().LookupUser(ctx, name)
		if err != nil {
			return adminError("user", name, err)
		}
		store, err := sso.NewSQLStore(ctx, b.db.db, b.db.dialect)
		if err != nil {
			return err
		}
		if err := sso.LinkUser(ctx, b.sso, store, issuer, subject, info.Name); err != nil {
			return adminError("user", name, err)
		}
		fmt.Fprintf(c.stdout, "user %q: single sign-on as %s at %s\n", info.Name, subject, issuer)
		return nil
	})
}
