package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"

	"github.com/nmauth/nmauth"
)

// The demo accounts --dev creates on an empty database.
const (
	demoUser = "demo"
	demoHost = "demo-host"
)

// checkLoopback refuses an address that other machines could reach: --dev
// allows the well-known master key.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--dev listens on loopback only (127.0.0.1, [::1] or localhost), not %q", addr)
}

// seedDemo creates a demo user and a demo host with random passwords when
// the database has no user yet, and prints them once, as shell export
// lines that the quickstart reads; on a database that has them, it prints
// the same lines without the passwords and says how to get back in. It
// prints the demo page's address first, and the master key last when it
// is the public default.
func seedDemo(ctx context.Context, b *backend, out io.Writer, addr net.Addr, withDefaultKey bool) error {
	fmt.Fprintf(out, "# nmauthd --dev: open the demo page at %s\n", devPageURL(addr))
	users, err := b.db.ListUsers(ctx, "", 1)
	if err != nil {
		return err
	}
	created := false
	if len(users) == 0 {
		if created, err = createDemoAccounts(ctx, b.auth, out, "http://"+addr.String()); err != nil {
			return err
		}
	}
	if !created {
		fmt.Fprintln(out, "# The demo accounts exist already; their passwords were shown once, when they were made.")
		fmt.Fprintf(out, "# To get back in, set a new one (nmauthd user passwd %s, with the same --db), or stop\n", demoUser)
		fmt.Fprintln(out, "# the server and delete the database and its .secret file to start afresh.")
		fmt.Fprintf(out, "export NMAUTH_URL=%s\n", "http://"+addr.String())
		fmt.Fprintf(out, "export DEMO_USER=%s\n", demoUser)
		fmt.Fprintf(out, "export DEMO_HOST=%s\n", demoHost)
	}
	if withDefaultKey {
		fmt.Fprintln(out, "# The master key is the well-known default, accepted only with --dev:")
		fmt.Fprintf(out, "export DEMO_MASTER_KEY=%s\n", defaultMasterKey)
	}
	return nil
}

// devPageURL is the demo page's address under --dev: localhost on the
// listening port, since browsers refuse passkeys on an IP address.
func devPageURL(addr net.Addr) string {
	_, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String() + "/"
	}
	return "http://localhost:" + port + "/"
}

// createDemoAccounts makes the demo user and host and prints their
// passwords; created is false when another process made the user first.
func createDemoAccounts(ctx context.Context, auth *nmauth.Authenticator, out io.Writer, baseURL string) (created bool, err error) {
	userPassword, hostPassword := rand.Text(), rand.Text()
	err = auth.Admin().CreateUser(ctx, demoUser, userPassword)
	if errors.Is(err, nmauth.ErrExists) {
		return false, nil // another process seeded the database meanwhile
	}
	if err != nil {
		return false, fmt.Errorf("creating the demo user: %w", err)
	}
	fmt.Fprintln(out, "# Demo accounts, shown this once. Paste these lines into the shell where you run")
	fmt.Fprintln(out, "# the quickstart: bash cmd/nmauthd/testdata/quickstart.sh")
	fmt.Fprintf(out, "export NMAUTH_URL=%s\n", baseURL)
	fmt.Fprintf(out, "export DEMO_USER=%s\n", demoUser)
	fmt.Fprintf(out, "export DEMO_PASSWORD=%s\n", userPassword)
	switch err := auth.Admin().CreateHost(ctx, demoHost, "", hostPassword); {
	case err == nil:
		fmt.Fprintf(out, "export DEMO_HOST=%s\n", demoHost)
		fmt.Fprintf(out, "export DEMO_HOST_PASSWORD=%s\n", hostPassword)
	case !errors.Is(err, nmauth.ErrExists):
		return true, fmt.Errorf("creating the demo host: %w", err)
	}
	return true, nil
}
