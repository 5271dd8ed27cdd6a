package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nmauth/nmauth"
)

// master is the principal of the admin commands: whoever can run them
// holds the database, as the master key's holder does.
var master = nmauth.Principal{Kind: nmauth.KindMaster}

// tokenCreate makes an access token and prints it, the only time it is
// shown.
func tokenCreate(ctx context.Context, c *cli, o *options, args []string) error {
	req := nmauth.AccessTokenRequest{UserName: args[0], Name: args[1], ReadOnly: o.readOnly, Networks: o.networks}
	if o.expires != "" {
		at, err := parseExpiry(o.expires, time.Now())
		if err != nil {
			return err
		}
		req.ExpiresAt = at
	}
	return c.withBackend(ctx, o, func(b *backend) error {
		t, token, err := b.auth.CreateAccessToken(ctx, master, req)
		if err != nil {
			return adminError("user", args[0], err)
		}
		fmt.Fprintf(c.stdout, "access token %s for %q, expires %s; it is shown only now:\n%s\n",
			t.ID, t.UserName, t.ExpiresAt.UTC().Format(time.RFC3339), token)
		return nil
	})
}

// parseExpiry reads --expires: an RFC 3339 time, or a lifetime such as
// 720h or 90d counted from now.
func parseExpiry(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		s = days + "h"
		d, err := time.ParseDuration(s)
		return now.Add(24 * d), err
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--expires %q: want an RFC 3339 time or a lifetime such as 720h or 90d", s)
	}
	return now.Add(d), nil
}

func tokenList(ctx context.Context, c *cli, o *options, args []string) error {
	return c.withBackend(ctx, o, func(b *backend) error {
		ts, err := b.auth.ListAccessTokens(ctx, master, args[0])
		if err != nil {
			return adminError("user", args[0], err)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tSCOPE\tEXPIRES\tLAST USED")
		for _, t := range ts {
			scope := choose(t.ReadOnly, "read-only", "read-write")
			if len(t.Networks) > 0 {
				scope += " in " + strings.Join(t.Networks, ",")
			}
			if len(t.Broken) > 0 {
				// What was read of a broken token is not its scope: with
				// its networks lost it would read as every network. The
				// store refuses it until check --repair deletes it.
				scope = "broken:" + strings.Join(t.Broken, ",")
			}
			used := "never"
			if !t.LastUsed.IsZero() {
				used = t.LastUsed.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, scope, t.ExpiresAt.UTC().Format(time.RFC3339), used)
		}
		return tw.Flush()
	})
}

func tokenDelete(ctx context.Context, c *cli, o *options, args []string) error {
	return c.withBackend(ctx, o, func(b *backend) error {
		if err := b.auth.DeleteAccessToken(ctx, master, args[0]); err != nil {
			return adminError("access token", args[0], err)
		}
		fmt.Fprintf(c.stdout, "access token %s revoked\n", args[0])
		return nil
	})
}
