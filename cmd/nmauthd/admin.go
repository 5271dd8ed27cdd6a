package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"golang.org/x/term"

	"github.com/nmauth/nmauth"
)

// maxPasswordInput bounds what is read from stdin as a password; the
// library's own limit is 1024 bytes.
const maxPasswordInput = 4096

// withBackend runs fn with the Authenticator over --db. Admin commands
// need no master key and never make a root secret file.
func (c *cli) withBackend(ctx context.Context, o *options, fn func(*backend) error) error {
	b, err := c.openBackend(ctx, o, nil, false, nil)
	if err != nil {
		return err
	}
	defer b.db.Close()
	return fn(b)
}

func userAdd(ctx context.Context, c *cli, o *options, args []string) error {
	name := args[0]
	password, err := c.readPassword(fmt.Sprintf("Password for %q: ", name), true)
	if err != nil {
		return err
	}
	if password == "" {
		return errors.New("user add: no password on stdin")
	}
	return c.withBackend(ctx, o, func(b *backend) error {
		if err := b.auth.Admin().CreateUser(ctx, name, password); err != nil {
			return adminError("user", name, err)
		}
		fmt.Fprintf(c.stdout, "user %q added\n", name)
		return nil
	})
}

func userList(ctx context.Context, c *cli, o *options, _ []string) error {
	return c.withBackend(ctx, o, func(b *backend) error {
		// The Authenticator has no listing of its own; reading the Store
		// is the only way.
		return writePages(ctx, c.stdout, "NAME\tDISABLED\tTOTP", b.db.ListUsers,
			func(u nmauth.User) string { return u.Name },
			func(u nmauth.User) string {
				return fmt.Sprintf("%s\t%s\t%s%s", u.Name, shown(u.Broken, "disabled", choose(u.Disabled, "yes", "no")),
					shown(u.Broken, "totp_secret", choose(u.TOTPEnabled(), "on", "off")), brokenMark(u.Broken))
			})
	})
}

func hostList(ctx context.Context, c *cli, o *options, _ []string) error {
	return c.withBackend(ctx, o, func(b *backend) error {
		return writePages(ctx, c.stdout, "ID\tDISABLED\tMAC", b.db.ListHosts,
			func(h nmauth.Host) string { return h.ID },
			func(h nmauth.Host) string {
				return fmt.Sprintf("%s\t%s\t%s%s", h.ID, shown(h.Broken, "disabled", choose(h.Disabled, "yes", "no")),
					shown(h.Broken, "mac_address", choose(h.MACAddress != "", h.MACAddress, "-")), brokenMark(h.Broken))
			})
	})
}

// shown is value, or "?" when column is among the broken ones: a value
// the store could not read is not shown as the zero value it holds.
func shown(broken []string, column, value string) string {
	if slices.Contains(broken, column) {
		return "?"
	}
	return value
}

// brokenMark is the last field of a listed record the store cannot
// decode, naming its broken columns, and empty for a sound one.
func brokenMark(broken []string) string {
	if len(broken) == 0 {
		return ""
	}
	return "\tbroken:" + strings.Join(broken, ",")
}

// listPage is how many records a list command reads and writes at a time.
const listPage = 1000

// writePages writes a table of every record that list pages through, one
// page at a time, so that a million records take the memory of one page.
// Columns are aligned within a page.
func writePages[T any](ctx context.Context, w io.Writer, header string, list func(context.Context, string, int) ([]T, error), key func(T) string, row func(T) string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	after := ""
	for {
		page, err := list(ctx, after, listPage)
		if err != nil {
			return err
		}
		for _, r := range page {
			fmt.Fprintln(tw, row(r))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if len(page) < listPage {
			return nil
		}
		after = key(page[len(page)-1])
	}
}

func userPasswd(ctx context.Context, c *cli, o *options, args []string) error {
	name := args[0]
	password, err := c.readPassword(fmt.Sprintf("New password for %q: ", name), true)
	if err != nil {
		return err
	}
	if password == "" {
		return errors.New("user passwd: no password on stdin")
	}
	return c.withBackend(ctx, o, func(b *backend) error {
		if err := b.auth.Admin().SetUserPassword(ctx, name, password); err != nil {
			return adminError("user", name, err)
		}
		fmt.Fprintf(c.stdout, "user %q has a new password; their tokens are revoked\n", name)
		return nil
	})
}

func userDisable(ctx context.Context, c *cli, o *options, args []string) error {
	return c.withBackend(ctx, o, func(b *backend) error {
		if err := b.auth.Admin().DisableUser(ctx, args[0]); err != nil {
			return adminError("user", args[0], err)
		}
		fmt.Fprintf(c.stdout, "user %q disabled; their tokens are revoked\n", args[0])
		return nil
	})
}

func userTOTPReset(ctx context.Context, c *cli, o *options, args []string) error {
	return c.withBackend(ctx, o, func(b *backend) error {
		if err := b.auth.Admin().ResetTOTP(ctx, args[0]); err != nil {
			return adminError("user", args[0], err)
		}
		fmt.Fprintf(c.stdout, "user %q has TOTP off; their tokens are revoked\n", args[0])
		return nil
	})
}

func hostAdd(ctx context.Context, c *cli, o *options, args []string) error {
	id := args[0]
	password, err := c.readPassword("", false)
	if err != nil {
		return err
	}
	generated := password == ""
	if generated {
		password = rand.Text()
	}
	for _, network := range o.networks {
		if network == "" || strings.ContainsAny(network, " \t/") {
			return fmt.Errorf("host add: --network %q is not a network name", network)
		}
	}
	// The membership is kept under the id in the form node login asks
	// for it (a UUID in lower case), which is the form the host is stored
	// in.
	if prepared, err := nmauth.PrepareHostID(id); err == nil {
		id = prepared
	}
	return c.withBackend(ctx, o, func(b *backend) error {
		if err := b.auth.Admin().CreateHost(ctx, id, o.mac, password); err != nil {
			return adminError("host", id, err)
		}
		for _, network := range o.networks {
			if _, err := b.db.addMembership(ctx, network, id); err != nil {
				return fmt.Errorf("host %q added, but not to network %q: %w", id, network, err)
			}
		}
		if generated {
			fmt.Fprintf(c.stdout, "host %q added, password (shown once): %s\n", id, password)
		} else {
			fmt.Fprintf(c.stdout, "host %q added\n", id)
		}
		return nil
	})
}

func reseal(ctx context.Context, c *cli, o *options, _ []string) error {
	return c.withBackend(ctx, o, func(b *backend) error {
		n, err := b.auth.Admin().ResealTOTPSecrets(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "resealed %d TOTP secrets under the first root secret\n", n)
		hosts, err := b.auth.Admin().HostsUnderOlderSecrets(ctx)
		if err != nil {
			return err
		}
		if hosts > 0 {
			fmt.Fprintf(c.stdout, "%d hosts keep their secret's digest under an older root secret until their next login; keep the older secrets until reseal reports none\n", hosts)
		}
		return nil
	})
}

// adminError turns the Store's sentinels into a sentence about the record.
func adminError(kind, name string, err error) error {
	switch {
	case errors.Is(err, nmauth.ErrExists):
		return fmt.Errorf("%s %q already exists", kind, name)
	case errors.Is(err, nmauth.ErrNotFound):
		return fmt.Errorf("no %s %q", kind, name)
	case errors.Is(err, nmauth.ErrInvalidHost):
		return fmt.Errorf("host %q: the id must be 1 to 128 printable characters without spaces, and --mac a MAC address", name)
	}
	return fmt.Errorf("%s %q: %w", kind, name, err)
}

func choose(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

// readPassword reads a password: from a terminal without echo, twice, if
// prompt is set and stdin is one (else "" from a terminal), or else the
// whole of stdin less one final line break.
func (c *cli) readPassword(prompt string, ask bool) (string, error) {
	if f, ok := c.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if !ask {
			return "", nil
		}
		return c.promptPassword(int(f.Fd()), prompt)
	}
	data, err := io.ReadAll(io.LimitReader(c.stdin, maxPasswordInput+1))
	if err != nil {
		return "", fmt.Errorf("reading the password from stdin: %w", err)
	}
	if len(data) > maxPasswordInput {
		return "", fmt.Errorf("the password on stdin is longer than %d bytes", maxPasswordInput)
	}
	data = bytes.TrimSuffix(data, []byte("\n"))
	data = bytes.TrimSuffix(data, []byte("\r"))
	if bytes.ContainsAny(data, "\r\n") {
		return "", errors.New("the password on stdin has more than one line")
	}
	return string(data), nil
}

func (c *cli) promptPassword(fd int, prompt string) (string, error) {
	fmt.Fprint(c.stderr, prompt)
	first, err := term.ReadPassword(fd)
	fmt.Fprintln(c.stderr)
	if err != nil {
		return "", fmt.Errorf("reading the password: %w", err)
	}
	fmt.Fprint(c.stderr, "Again: ")
	second, err := term.ReadPassword(fd)
	fmt.Fprintln(c.stderr)
	if err != nil {
		return "", fmt.Errorf("reading the password: %w", err)
	}
	if subtle.ConstantTimeCompare(first, second) != 1 {
		return "", errors.New("the passwords differ")
	}
	return string(first), nil
}
