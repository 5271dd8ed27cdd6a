package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/nmauth/nmauth/passkey"
)

// passkeyPatterns are the paths of the passkey package's routes on
// nmauthd's mux: more specific than the handler's /api/, so that they reach
// the passkey handler, which passes anything else on to the Authenticator.
var passkeyPatterns = []string{
	"/api/users/{username}/passkeys",
	"/api/users/{username}/passkeys/",
	"/api/users/{username}/auth/passkey/",
	"/api/users/adm/passkey/",
}

// relyingParty is the relying party passkeys are served for: from
// --passkey-rp-id and --passkey-origin (by default https:// and the id),
// or with --dev and neither, localhost on the port nmauthd listens on,
// the one name a browser accepts for a page on loopback. on is false when
// passkeys are off: no --passkey-rp-id and no --dev.
func relyingParty(o *options, addr net.Addr) (rpID string, origins []string, on bool, err error) {
	switch {
	case o.passkeyRPID != "":
		origins = o.passkeyOrigins
		if len(origins) == 0 {
			origins = []string{"https://" + o.passkeyRPID}
		}
		return o.passkeyRPID, origins, true, nil
	case len(o.passkeyOrigins) > 0:
		return "", nil, false, errors.New("--passkey-origin needs --passkey-rp-id")
	case o.dev:
		tcp, ok := addr.(*net.TCPAddr)
		if !ok {
			return "", nil, false, fmt.Errorf("passkeys: %s is no TCP address", addr)
		}
		return "localhost", []string{fmt.Sprintf("http://localhost:%d", tcp.Port)}, true, nil
	}
	return "", nil, false, nil
}

// addPasskeyRoutes serves the passkey routes on mux when passkeys are on,
// for the relying party of the flags; passwordless login is on with
// --passwordless, and with --dev, whose page shows it.
func addPasskeyRoutes(mux *http.ServeMux, b *backend, o *options, addr net.Addr, log *slog.Logger) error {
	rpID, origins, on, err := relyingParty(o, addr)
	if err != nil || !on {
		return err
	}
	pk, err := passkey.New(passkey.Config{
		Extension:    b.passkeys,
		Store:        b.db.passkeys,
		RPID:         rpID,
		RPName:       "nmauth",
		Origins:      origins,
		Passwordless: o.passwordless || o.dev,
		Logger:       log,
	})
	if err != nil {
		return fmt.Errorf("--passkey-rp-id, --passkey-origin: %w", err)
	}
	h := pk.Handler()
	for _, pattern := range passkeyPatterns {
		mux.Handle(pattern, h)
	}
	log.Info("passkeys on", "rp_id", rpID, "origins", fmt.Sprint(origins), "passwordless", o.passwordless || o.dev)
	return nil
}

// userPasskeys lists a user's passkeys.
func userPasskeys(ctx context.Context, c *cli, o *options, args []string) error {
	return c.withBackend(ctx, o, func(b *backend) error {
		list, err := passkey.ListPasskeys(ctx, b.passkeys, b.db.passkeys, args[0])
		if err != nil {
			return adminError("user", args[0], err)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tCREATED\tLAST USED\tSIGN COUNT\tDISCOVERABLE\tID")
		for _, p := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", p.Name, p.CreatedAt.UTC().Format(time.RFC3339),
				choose(p.LastUsedAt.IsZero(), "never", p.LastUsedAt.UTC().Format(time.RFC3339)),
				p.SignCount, choose(p.Discoverable, "yes", "no"), p.ID)
		}
		return tw.Flush()
	})
}

// userPasskeysReset removes all of a user's passkeys.
func userPasskeysReset(ctx context.Context, c *cli, o *options, args []string) error {
	return c.withBackend(ctx, o, func(b *backend) error {
		n, err := passkey.ResetPasskeys(ctx, b.passkeys, b.db.passkeys, args[0])
		if err != nil {
			return adminError("user", args[0], err)
		}
		fmt.Fprintf(c.stdout, "user %q: %d passkeys removed; their tokens are revoked\n", args[0], n)
		return nil
	})
}
