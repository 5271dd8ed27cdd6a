package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nmauth/nmauth"
)

// enrollKeyCreate makes an enrollment key and prints it, the only time
// it is shown: the key, and with --server the Netmaker token that
// netclient join -t takes, which names that server.
func enrollKeyCreate(ctx context.Context, c *cli, o *options, args []string) error {
	k := nmauth.EnrollmentKey{Name: args[0], Tags: o.tags, Networks: o.networks, Uses: o.uses, Unlimited: o.unlimited}
	if o.expires != "" {
		at, err := parseExpiry(o.expires, time.Now())
		if err != nil {
			return err
		}
		k.ExpiresAt = at
	}
	return c.withBackend(ctx, o, func(b *backend) error {
		made, key, err := b.auth.Admin().CreateEnrollmentKey(ctx, k)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "enrollment key %s %q, %s; it is shown only now:\n%s\n", made.ID, made.Name, keyLimits(made), key)
		if o.server != "" {
			tok, _ := json.Marshal(map[string]string{"server": o.server, "value": key})
			fmt.Fprintf(c.stdout, "netclient join -t %s\n", base64.StdEncoding.EncodeToString(tok))
		}
		return nil
	})
}

// keyLimits says how many joins a key admits and until when.
func keyLimits(k nmauth.EnrollmentKey) string {
	s := "unlimited uses"
	if !k.Unlimited {
		s = strconv.Itoa(k.Used) + " of " + strconv.Itoa(k.Uses) + " uses spent"
	}
	if !k.ExpiresAt.IsZero() {
		s += ", expires " + k.ExpiresAt.UTC().Format(time.RFC3339)
	}
	return s
}

func enrollKeyList(ctx context.Context, c *cli, o *options, _ []string) error {
	return c.withBackend(ctx, o, func(b *backend) error {
		ks, err := b.auth.Admin().EnrollmentKeys(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tNETWORKS\tLIMITS\tREVOKED")
		for _, k := range ks {
			revoked := "no"
			if !k.RevokedAt.IsZero() {
				revoked = k.RevokedAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, strings.Join(k.Networks, ","), keyLimits(k), revoked)
		}
		return tw.Flush()
	})
}

func enrollKeyRevoke(ctx context.Context, c *cli, o *options, args []string) error {
	return c.withBackend(ctx, o, func(b *backend) error {
		if err := b.auth.Admin().RevokeEnrollmentKey(ctx, args[0]); err != nil {
			return adminError("enrollment key", args[0], err)
		}
		fmt.Fprintf(c.stdout, "enrollment key %s revoked; it stays listed until deleted\n", args[0])
		return nil
	})
}

func enrollKeyDelete(ctx context.Context, c *cli, o *options, args []string) error {
	return c.withBackend(ctx, o, func(b *backend) error {
		if err := b.auth.Admin().DeleteEnrollmentKey(ctx, args[0]); err != nil {
			return adminError("enrollment key", args[0], err)
		}
		fmt.Fprintf(c.stdout, "enrollment key %s deleted\n", args[0])
		return nil
	})
}

// joinHook returns the HostJoined hook of serve: it makes the joined host
// a member of the key's networks in nmauthd's table of memberships, for
// node login, and answers the JSON object of --netmaker-server-config
// (empty without one) as the join's server config.
func joinHook(path string, db *database) (func(context.Context, string, nmauth.EnrollmentKey, []byte) (any, error), error) {
	cfg := json.RawMessage("{}")
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("--netmaker-server-config: %w", err)
		}
		var obj map[string]any
		if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
			return nil, errors.New("--netmaker-server-config: " + path + " is not a JSON object")
		}
		cfg = b
	}
	return func(ctx context.Context, hostID string, k nmauth.EnrollmentKey, _ []byte) (any, error) {
		for _, network := range k.Networks {
			if _, err := db.addMembership(ctx, network, hostID); err != nil {
				return nil, err
			}
		}
		return cfg, nil
	}, nil
}
