package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/cors"

	"github.com/nmauth/nmauth"
)

// Server timeouts: a client that sends its request slowly, or never reads
// the answer, cannot hold a connection open for long.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 15 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 60 * time.Second
	maxHeaderBytes    = 16 << 10
	shutdownTimeout   = 10 * time.Second
)

// newMux returns the routes of nmauthd: the nmauth handler at /api/, the
// bearer-protected GET /api/whoami, GET /healthz, GET /openapi.yaml, and the
// demo page at GET / with its assets. More routes can be added to the
// returned mux.
func newMux(auth *nmauth.Authenticator, wire nmauth.WireProfile) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/api/", auth.Handler())
	mux.Handle("GET /api/whoami", auth.Middleware(http.HandlerFunc(serveWhoami)))
	mux.HandleFunc("GET /healthz", serveHealthz)
	mux.HandleFunc("GET /openapi.yaml", serveOpenAPI(wire))
	mux.HandleFunc("GET /{$}", servePage)
	mux.HandleFunc("GET /assets/", serveAsset)
	return mux
}

// serveWhoami answers the principal that authenticated the request.
func serveWhoami(w http.ResponseWriter, r *http.Request) {
	p, _ := nmauth.FromContext(r.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(p)
}

func serveHealthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprintln(w, "ok")
}

func newHTTPServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// serve runs the HTTP server until SIGINT or SIGTERM, then lets the
// requests in flight finish.
func serve(ctx context.Context, c *cli, o *options, _ []string) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.dev {
		if err := checkLoopback(o.addr); err != nil {
			return err
		}
	}
	master, masterSrc, err := loadMasterKey(c.getenv, o.dev, c.log)
	if err != nil {
		return err
	}
	wire, err := nmauth.ParseWireProfile(o.wire)
	if err != nil {
		return fmt.Errorf("--wire: %q is neither spec nor netmaker", o.wire)
	}
	var m *metrics
	var instrument func(*nmauth.Config)
	if o.metricsAddr != "" {
		if m, err = newMetrics(wire); err != nil {
			return err
		}
		instrument = m.instrument
	}
	b, err := c.openBackend(ctx, o, master, instrument)
	if err != nil {
		return err
	}
	defer b.db.Close()
	if m != nil {
		stop, err := startMetrics(o, m, c.log)
		if err != nil {
			return err
		}
		defer stop()
	}
	ln, err := listen(o.addr, o.dev)
	if err != nil {
		return err
	}
	if o.dev {
		err := seedDemo(ctx, b, c.stdout, "http://"+ln.Addr().String(), masterSrc == nmauth.MasterKeyFromDefault)
		if err != nil {
			ln.Close()
			return err
		}
	}
	c.log.Info("listening", "addr", ln.Addr().String(), "db", b.db.name,
		"master_key", string(masterSrc), "root_secret", b.secretSource, "dev", o.dev,
		"wire", o.wire, "cors_origins", o.corsOrigins.String())
	var h http.Handler = newMux(b.auth, wire)
	if m != nil {
		h = m.handler(h)
	}
	h = withCORS(h, o.corsOrigins)
	return runServer(ctx, newHTTPServer(logRequests(c.log, h), c.log), ln, c.log)
}

// corsHeaders are the request headers a web UI on another origin may send:
// the bearer, the JSON body, and the two headers Netmaker's UI adds.
var corsHeaders = []string{"Authorization", "Content-Type", "From-Ui", "X-Application-Name"}

// withCORS lets web pages from origins call h; with none, h is unchanged
// and browsers keep other origins out. No cookies are involved: the
// credential travels in the Authorization header.
func withCORS(h http.Handler, origins []string) http.Handler {
	if len(origins) == 0 {
		return h
	}
	return cors.New(cors.Options{
		AllowedOrigins: origins,
		AllowedMethods: []string{http.MethodGet, http.MethodPost},
		AllowedHeaders: corsHeaders,
		MaxAge:         600,
	}).Handler(h)
}

func listen(addr string, dev bool) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); dev && (!ok || !tcp.IP.IsLoopback()) {
		ln.Close()
		return nil, fmt.Errorf("--dev listens on loopback only, and %s is not", ln.Addr())
	}
	return ln, nil
}

func runServer(ctx context.Context, srv *http.Server, ln net.Listener, log *slog.Logger) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", "timeout", shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}

// loadMasterKey wraps nmauth.LoadMasterKey with advice on what to set.
func loadMasterKey(getenv func(string) string, dev bool, log *slog.Logger) (*nmauth.MasterKey, nmauth.MasterKeySource, error) {
	mk, src, err := nmauth.LoadMasterKey(nmauth.MasterKeyOptions{Getenv: getenv, AllowInsecure: dev, Logger: log})
	if errors.Is(err, nmauth.ErrInsecureMasterKey) {
		return nil, "", fmt.Errorf("%w; or run with --dev to try nmauthd on loopback with the default key", err)
	}
	if err != nil {
		env := getenv("NMAUTH_ENV")
		if env == "" {
			env = "dev"
		}
		return nil, "", fmt.Errorf("no usable master key: %w; set MASTER_KEY or server.masterkey in config/environments/%s.yaml", err, env)
	}
	return mk, src, nil
}

// backend is the Authenticator over --db.
type backend struct {
	auth *nmauth.Authenticator
	db   *database
	// secretSource says where the root secrets came from, for the log.
	secretSource string
}

// openBackend opens --db and builds the Authenticator over it; instrument,
// if not nil, may change the configuration first. The caller closes the
// database.
func (c *cli) openBackend(ctx context.Context, o *options, master *nmauth.MasterKey, instrument func(*nmauth.Config)) (*backend, error) {
	secrets, err := loadRootSecrets(c.getenv, o.db, c.log)
	if err != nil {
		return nil, err
	}
	db, err := openDatabase(ctx, o.db)
	if err != nil {
		return nil, err
	}
	wire, err := nmauth.ParseWireProfile(o.wire)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("--wire: %q is neither spec nor netmaker", o.wire)
	}
	cfg := nmauth.Config{
		Store:      db,
		Secrets:    secrets.secrets,
		MasterKey:  master,
		Wire:       wire,
		NodeMember: db.isMember,
		OnEvent:    auditLogger(c.log),
		Logger:     c.log,
	}
	if instrument != nil {
		instrument(&cfg)
	}
	auth, err := nmauth.New(cfg)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &backend{auth: auth, db: db, secretSource: secrets.source}, nil
}
