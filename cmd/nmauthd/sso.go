package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/nmauth/nmauth/sso"
)

// addSSORoutes serves single sign-on with the provider of --sso-issuer,
// when it is given, at /api/oauth/, and GET /api/oauth/enabled, which
// tells the demo page to show its button. The client secret comes from
// NMAUTH_SSO_CLIENT_SECRET, never from a flag, which other users of the
// machine could read.
func addSSORoutes(ctx context.Context, mux *http.ServeMux, b *backend, o *options, log *slog.Logger) error {
	if o.ssoIssuer == "" {
		if o.ssoClientID != "" || o.ssoRedirectURL != "" {
			return errors.New("--sso-client-id and --sso-redirect-url need --sso-issuer")
		}
		return nil
	}
	if o.ssoClientID == "" || o.ssoRedirectURL == "" {
		return errors.New("--sso-issuer needs --sso-client-id and --sso-redirect-url")
	}
	store, err := sso.NewSQLStore(ctx, b.db.db, b.db.dialect)
	if err != nil {
		return fmt.Errorf("single sign-on tables: %w", err)
	}
	s, err := sso.New(ctx, sso.Config{
		Auth: b.auth, Store: store,
		Issuer: o.ssoIssuer, ClientID: o.ssoClientID, ClientSecret: os.Getenv("NMAUTH_SSO_CLIENT_SECRET"),
		RedirectURL: o.ssoRedirectURL, CreateUsers: o.ssoCreateUsers,
		AllowedDomains: o.ssoDomains, RequiredGroup: o.ssoGroup,
		OnLogin: func(ctx context.Context, id sso.Identity) error {
			log.InfoContext(ctx, "sso login", "issuer", id.Issuer, "subject", id.Subject, "user", id.UserName)
			return nil
		},
	})
	if err != nil {
		return err
	}
	mux.Handle("/api/oauth/", s.Handler())
	mux.HandleFunc("GET /api/oauth/enabled", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNoContent)
	})
	log.Info("single sign-on on", "issuer", o.ssoIssuer, "create_users", o.ssoCreateUsers)
	return nil
}

// userSSOLink links an identity of an OpenID provider to an existing user,
// so that its single sign-on logs in as that user: the issuer as the
// provider names itself, and the identity's subject there.
func userSSOLink(ctx context.Context, c *cli, o *options, args []string) error {
	name, issuer, subject := args[0], args[1], args[2]
	return c.withBackend(ctx, o, func(b *backend) error {
		info, err := b.auth.LookupUser(ctx, name)
		if err != nil {
			return adminError("user", name, err)
		}
		store, err := sso.NewSQLStore(ctx, b.db.db, b.db.dialect)
		if err != nil {
			return err
		}
		if err := store.AddLink(ctx, issuer, subject, info.Name); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "user %q: single sign-on as %s at %s\n", info.Name, subject, issuer)
		return nil
	})
}
