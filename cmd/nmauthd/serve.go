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
	"github.com/nmauth/nmauth/passkey"
)

// Server timeouts: a client that sends its request slowly, or never reads
// the answer, cannot hold a connection open for long. A read the server
// starts only after its deadline still takes the bytes that had arrived
// (see lateReadConn), so a starved CPU does not cut off a prompt client.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 15 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 60 * time.Second
	maxHeaderBytes    = 16 << 10
	shutdownTimeout   = 10 * time.Second
)

// newMux returns the routes of nmauthd with the demo page; see newRoutes.
func newMux(auth *nmauth.Authenticator, wire nmauth.WireProfile) *http.ServeMux {
	return newRoutes(auth, wire, true)
}

// newRoutes returns the routes of nmauthd: the nmauth handler at /api/, the
// bearer-protected GET /api/whoami, GET /healthz (the process lives),
// GET /readyz (the store answers), GET /openapi.yaml, and, when page is
// set, the demo page at GET / with its assets. Outside /api/, where the
// handler answers, a path no route serves answers 404 and another method
// on a GET route 405 with Allow, both in the error envelope of the
// Authenticator's wire profile. More routes can be added to the returned
// mux.
func newRoutes(auth *nmauth.Authenticator, wire nmauth.WireProfile, page bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/api/", auth.Handler())
	mux.Handle("GET /api/whoami", auth.Middleware(http.HandlerFunc(serveWhoami)))
	mux.HandleFunc("GET /healthz", serveHealthz)
	mux.HandleFunc("GET /openapi.yaml", serveOpenAPI(wire))
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) { serveReadyz(w, r, auth) })
	getPaths := []string{"/healthz", "/openapi.yaml", "/readyz"}
	if page {
		mux.HandleFunc("GET /{$}", servePage)
		mux.HandleFunc("GET /assets/", serveAsset)
		getPaths = append(getPaths, "/{$}", "/assets/")
	}
	// A pattern without a method matches what the GET pattern beside it
	// does not, so that these answers replace ServeMux's plain-text ones.
	wrongMethod := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "GET, HEAD")
		auth.WriteResponse(w, r, http.StatusMethodNotAllowed, "method not allowed", nil)
	}
	for _, path := range getPaths {
		mux.HandleFunc(path, wrongMethod)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		auth.WriteResponse(w, r, http.StatusNotFound, "not found", nil)
	})
	return mux
}

// serveWhoami answers the principal that authenticated the request.
func serveWhoami(w http.ResponseWriter, r *http.Request) {
	p, _ := nmauth.FromContext(r.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	// The networks of an access token's scope are read by a method.
	json.NewEncoder(w).Encode(struct {
		nmauth.Principal
		Networks []string `json:"networks,omitempty"`
	}{p, p.Networks()})
}

func serveHealthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprintln(w, "ok")
}

// serveReadyz answers 200 when the store answers within its deadline, and
// 503 with Retry-After otherwise, so a load balancer stops sending
// traffic to a replica whose database is gone.
func serveReadyz(w http.ResponseWriter, r *http.Request, auth *nmauth.Authenticator) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := auth.Ready(r.Context()); err != nil {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "store unavailable")
		return
	}
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
// requests in flight finish. SIGHUP is ignored: the server has nothing to
// reload, and a closed terminal must not stop it mid-request.
func serve(ctx context.Context, c *cli, o *options, _ []string) error {
	signal.Ignore(syscall.SIGHUP)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.dev {
		if err := checkLoopback(o.addr); err != nil {
			return err
		}
	}
	master, masterSrc, err := loadMasterKey(c.getenv, ".", o.dev, o.allowWeakMasterKey, c.log)
	if err != nil {
		return err
	}
	wire, err := nmauth.ParseWireProfile(o.wire)
	if err != nil {
		return fmt.Errorf("--wire: %q is neither spec nor netmaker", o.wire)
	}
	if err := checkCORSOrigins(o.corsOrigins); err != nil {
		return err
	}
	if o.trustedProxies, err = trustedProxies(o, c.getenv); err != nil {
		return err
	}
	if err := checkSSOFlags(o, c.getenv); err != nil {
		return err
	}
	maxConns, perGroup, err := connCaps(o.maxConns, o.maxConnsPerGroup, fileLimit())
	if err != nil {
		return err
	}
	var m *metrics
	var instrument func(*nmauth.Config)
	if o.metricsAddr != "" {
		if m, err = newMetrics(wire); err != nil {
			return err
		}
		instrument = m.instrument
	}
	b, err := c.openBackend(ctx, o, master, true, instrument)
	if err != nil {
		return err
	}
	defer b.db.Close()
	defer b.netmaker.close()
	if m != nil {
		m.observeAuthenticator(b.auth)
		m.observeLog(c.logOut)
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
		err := seedDemo(ctx, b, c.stdout, ln.Addr(), masterSrc == masterKeyFromDefault)
		if err != nil {
			ln.Close()
			return err
		}
	}
	c.log.Info("listening", "addr", ln.Addr().String(), "db", b.db.name,
		"master_key", string(masterSrc), "root_secret", b.secretSource, "dev", o.dev,
		"wire", o.wire, "cors_origins", o.corsOrigins.String(), "trusted_proxies", o.trustedProxies.String(),
		"max_conns", maxConns, "max_conns_per_group", perGroup)
	if o.demoPage && !o.dev {
		c.log.Info("demo page", "url", "http://"+ln.Addr().String()+"/")
	}
	// The page offers a form for the master key; it is served only where
	// the operator asked for it.
	mux := newRoutes(b.auth, wire, o.dev || o.demoPage)
	addAdminRoutes(mux, b.auth, c.log)
	if err := addPasskeyRoutes(mux, b, o, ln.Addr(), c.log); err != nil {
		ln.Close()
		return err
	}
	if err := addSSORoutes(ctx, mux, b, o, c.getenv, c.log); err != nil {
		ln.Close()
		return err
	}
	var h http.Handler = mux
	if b.netmaker != nil {
		h = withApplicationName(h)
	}
	if m != nil {
		h = m.handler(h)
	}
	h = withCORS(h, o.corsOrigins)
	if o.dev {
		h = devHostsOnly(h, ln.Addr(), b.auth)
	}
	if o.accessLog {
		h = logRequests(c.log, h)
	}
	conns := newConnTable(maxConns, perGroup)
	srv := newHTTPServer(h, c.log)
	srv.ConnState = conns.track
	ln = &capListener{Listener: ln, table: conns, trusted: o.trustedProxies, log: c.log}
	return runServer(ctx, srv, ln, c.log, b.auth.Shutdown)
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

// listen listens on addr; its connections are lateReadConns.
func listen(addr string, dev bool) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); dev && (!ok || !tcp.IP.IsLoopback()) {
		ln.Close()
		return nil, fmt.Errorf("--dev listens on loopback only, and %s is not", ln.Addr())
	}
	return lateReadListener{Listener: ln, firstWait: idleTimeout}, nil
}

// runServer serves until ctx ends, then shuts srv down and, once no
// request runs, calls drain, which makes the writes the Authenticator
// still holds (see nmauth.Authenticator.Shutdown).
func runServer(ctx context.Context, srv *http.Server, ln net.Listener, log *slog.Logger, drain func(context.Context) error) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		return errors.Join(err, drain(sctx))
	case <-ctx.Done():
	}
	log.Info("shutting down", "timeout", shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	err = errors.Join(err, drain(sctx))
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}

// backend is the Authenticator over --db.
type backend struct {
	auth *nmauth.Authenticator
	db   *database
	// passkeys and sso are the powers of the passkey and single sign-on
	// routes and admin commands, registered with auth.
	passkeys, sso *nmauth.Extension
	// secretSource says where the root secrets came from, for the log.
	secretSource string
	// netmaker is Netmaker's database, read live, with --netmaker-db.
	netmaker *netmakerStore
}

// openBackend opens --db and builds the Authenticator over it. The caller
// closes the database. The database is opened first, so that a file that
// is no database is refused before any secret file is made beside it; a
// secret file is made only for the server (mayCreate) on a database that
// holds no accounts. The root secrets are then checked against the
// database (see nmauth.Authenticator.CheckSecrets). instrument, if not
// nil, may change the configuration first.
func (c *cli) openBackend(ctx context.Context, o *options, master *nmauth.MasterKey, mayCreate bool, instrument func(*nmauth.Config)) (*backend, error) {
	if isPostgresDSN(o.db) && c.getenv(envSecret) == "" {
		// Says what is missing before trying to reach the server.
		_, err := loadRootSecrets(c.getenv, o.db, false, c.log)
		return nil, err
	}
	db, err := openDatabase(ctx, o.db, c.log)
	if err != nil {
		return nil, err
	}
	b, err := c.newBackend(ctx, o, db, master, mayCreate, instrument)
	if err != nil {
		db.Close()
		return nil, err
	}
	return b, nil
}

func (c *cli) newBackend(ctx context.Context, o *options, db *database, master *nmauth.MasterKey, mayCreate bool, instrument func(*nmauth.Config)) (*backend, error) {
	if mayCreate {
		has, err := db.HasAccounts(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading database %s: %w", db.name, err)
		}
		mayCreate = !has
	}
	secrets, err := loadRootSecrets(c.getenv, o.db, mayCreate, c.log)
	if err != nil {
		return nil, err
	}
	wire, err := nmauth.ParseWireProfile(o.wire)
	if err != nil {
		return nil, fmt.Errorf("--wire: %q is neither spec nor netmaker", o.wire)
	}
	joined, err := joinHook(o.netmakerServerConfig, db)
	if err != nil {
		return nil, err
	}
	passkeys, sso := new(nmauth.Extension), new(nmauth.Extension)
	cfg := nmauth.Config{
		Extensions: []*nmauth.Extension{passkeys, sso},
		Store:      db,
		Secrets:    secrets.secrets,
		MasterKey:  master,
		Wire:       wire,
		NodeMember: db.isMember,
		HostJoined: joined,
		OnEvent:    auditLogger(c.log),
		Logger:     c.log,
		// Set by serve only; the admin commands serve no requests.
		TrustedProxies: o.trustedProxies,
	}
	// Asked even while passkeys are off (no --passkey-rp-id), so that a
	// user who has one never logs in with the password alone.
	cfg.SecondFactor = passkey.SecondFactor(db.passkeys)
	live, err := frontNetmaker(ctx, o, db, secrets.secrets, &cfg, c.log)
	if err != nil {
		return nil, err
	}
	if instrument != nil {
		instrument(&cfg)
	}
	auth, err := nmauth.New(cfg)
	if err != nil {
		live.close()
		return nil, err
	}
	live.serves(auth)
	if err := auth.CheckSecrets(ctx); errors.Is(err, nmauth.ErrSecretMismatch) {
		live.close()
		where := envSecret
		if !isPostgresDSN(o.db) {
			where += " or " + secretFilePath(o.db)
		}
		return nil, fmt.Errorf("database %s was not written under the root secret from %s (%v); "+
			"restore the secret that wrote it (%s)", db.name, secrets.source, err, where)
	} else if err != nil {
		live.close()
		return nil, fmt.Errorf("checking the root secret against %s: %w", db.name, err)
	}
	return &backend{auth: auth, db: db, passkeys: passkeys, sso: sso, secretSource: secrets.source, netmaker: live}, nil
}
