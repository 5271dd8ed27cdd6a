package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/nmauth/nmauth"
)

// newServeMux mounts an Authenticator as nmauthd does: GET /healthz open,
// GET /api/whoami behind the bearer middleware, and the five routes; and
// GET /app/open and GET /app/users, one handler bare and behind
// Require(KindUser).
func newServeMux(auth *nmauth.Authenticator) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"ok"}`+"\n")
	})
	mux.Handle("GET /api/whoami", auth.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := nmauth.FromContext(r.Context())
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(p)
	})))
	// One route of an application, bare and behind Require, so that wrk
	// can measure in turns what the bearer check costs a route.
	app := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"networks":[]}`+"\n")
	})
	mux.Handle("GET /app/open", app)
	mux.Handle("GET /app/users", auth.Require(nmauth.KindUser)(app))
	mux.Handle("/api/", auth.Handler())
	return mux
}

// serveMemory serves the library over a MemoryStore on a loopback address
// with nmauthd's routes, for the memory-store figures that nmauthd, which
// keeps its data in SQL, cannot give. It trusts 127.0.0.1 as a reverse
// proxy, so that the groups scenario may name its clients in
// X-Forwarded-For; a request without the header is its peer's. It
// creates the user -user, -flood-user, and the
// users -totp-prefix-0000… (TOTP off, for -setup to enroll) and the hosts
// of the fleet scenario, prints the credentials, and serves until ctx
// ends.
func serveMemory(ctx context.Context, o *options, out io.Writer) error {
	ap, err := netip.ParseAddrPort(o.serve)
	if err != nil || !ap.Addr().IsLoopback() {
		return fmt.Errorf("-serve %q: want a loopback address and port, such as 127.0.0.1:8090", o.serve)
	}
	masterKey := o.masterKey
	if masterKey == "" {
		masterKey = randomHex(24)
	}
	mk, err := nmauth.NewMasterKey(masterKey, false, nil)
	if err != nil {
		return err
	}
	store := nmauth.NewMemoryStore()
	auth, err := nmauth.New(nmauth.Config{
		Store:     store,
		Secrets:   [][]byte{randomBytes(32)},
		MasterKey: mk,
		// The groups scenario names its clients through the proxy.
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Logger:         slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	if err := seedUsers(ctx, o, auth, out); err != nil {
		return err
	}
	if err := seedFleet(ctx, o, auth, store, out); err != nil {
		return err
	}
	if o.masterKey == "" {
		fmt.Fprintf(out, "master key: %s\n", masterKey)
	}
	ln, err := net.Listen("tcp", o.serve)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: newServeMux(auth), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	fmt.Fprintf(out, "serving the memory store on http://%s\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func seedUsers(ctx context.Context, o *options, auth *nmauth.Authenticator, out io.Writer) error {
	if o.user != "" {
		if o.password == "" {
			o.password = randomHex(8)
			fmt.Fprintf(out, "user: %s / %s\n", o.user, o.password)
		}
		if err := auth.Admin().CreateUser(ctx, o.user, o.password); err != nil {
			return fmt.Errorf("creating %s: %w", o.user, err)
		}
	}
	if g := o.groups; g.floodUser != "" && g.floodPassword != "" {
		if err := auth.Admin().CreateUser(ctx, g.floodUser, g.floodPassword); err != nil {
			return fmt.Errorf("creating %s: %w", g.floodUser, err)
		}
	}
	names := totpNames(o)
	if len(names) == 0 {
		return nil
	}
	if o.totpPassword == "" {
		return errors.New("-serve with TOTP users needs -totp-password or NMAUTH_LOAD_TOTP_PASSWORD")
	}
	err := forEach(ctx, len(names), max(o.bounds.clients, 1), func(i int) error {
		return auth.Admin().CreateUser(ctx, names[i], o.totpPassword)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "created %d users %s…%s, TOTP off\n", len(names), names[0], names[len(names)-1])
	return nil
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func randomHex(n int) string { return hex.EncodeToString(randomBytes(n)) }
