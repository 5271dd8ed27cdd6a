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
// the database has no user yet, and prints them once, as shell variable
// assignments that the quickstart reads. It also prints the master key
// when it is the public default.
func seedDemo(ctx context.Context, b *backend, out io.Writer, baseURL string, defaultMasterKey bool) error {
	users, err := b.db.ListUsers(ctx, "", 1)
	if err != nil {
		return err
	}
	if len(users) == 0 {
		if err := createDemoAccounts(ctx, b.auth, out, baseURL); err != nil {
			return err
		}
	}
	if defaultMasterKey {
		fmt.Fprintln(out, "# The master key is the well-known default, accepted only with --dev:")
		fmt.Fprintf(out, "DEMO_MASTER_KEY=%s\n", nmauth.DefaultMasterKey)
	}
	return nil
}

func createDemoAccounts(ctx context.Context, auth *nmauth.Authenticator, out io.Writer, baseURL string) error {
	userPassword, hostPassword := rand.Text(), rand.Text()
	err := auth.Admin().CreateUser(ctx, demoUser, userPassword)
	if errors.Is(err, nmauth.ErrExists) {
		return nil // another process seeded the database meanwhile
	}
	if err != nil {
		return fmt.Errorf("creating the demo user: %w", err)
	}
	fmt.Fprintln(out, "# nmauthd --dev: demo accounts, shown this once. Paste these lines into the shell")
	fmt.Fprintln(out, "# where you run the quickstart (cmd/nmauthd/testdata/quickstart.sh):")
	fmt.Fprintf(out, "NMAUTH_URL=%s\n", baseURL)
	fmt.Fprintf(out, "DEMO_USER=%s\n", demoUser)
	fmt.Fprintf(out, "DEMO_PASSWORD=%s\n", userPassword)
	switch err := auth.Admin().CreateHost(ctx, demoHost, "", hostPassword); {
	case err == nil:
		fmt.Fprintf(out, "DEMO_HOST=%s\n", demoHost)
		fmt.Fprintf(out, "DEMO_HOST_PASSWORD=%s\n", hostPassword)
	case !errors.Is(err, nmauth.ErrExists):
		return fmt.Errorf("creating the demo host: %w", err)
	}
	return nil
}
