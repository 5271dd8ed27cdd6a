package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.yaml.in/yaml/v3"

	"github.com/nmauth/nmauth"
)

// metrics are the Prometheus metrics of nmauthd, fed the way an embedder
// of the library would feed its own: from Config.OnEvent, from a wrapper
// around the HTTP handler and from a wrapper around the Store. The library
// itself knows nothing of Prometheus.
type metrics struct {
	registry  *prometheus.Registry
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	logins    *prometheus.CounterVec
	totp      *prometheus.CounterVec
	throttled prometheus.Counter
	events    *prometheus.CounterVec
	storeTime *prometheus.HistogramVec
	storeErrs *prometheus.CounterVec
	routes    routeLabeler
}

// Results of logins and TOTP checks, the values of their result label.
const (
	resultSuccess    = "success"
	resultWrong      = "wrong"
	resultThrottled  = "throttled"
	resultOverloaded = "overloaded"
)

func newMetrics(wire nmauth.WireProfile) (*metrics, error) {
	routes, err := newRouteLabeler(openAPI(wire))
	if err != nil {
		return nil, err
	}
	m := &metrics{
		registry: prometheus.NewRegistry(),
		routes:   routes,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nmauthd_http_requests_total",
			Help: "HTTP requests answered, by route pattern and status.",
		}, []string{"route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "nmauthd_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route pattern.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"route"}),
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nmauthd_logins_total",
			Help: "Password logins by principal kind and result: success, wrong, throttled (per account), overloaded (answered 503).",
		}, []string{"kind", "result"}),
		totp: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nmauthd_totp_checks_total",
			Help: "Codes checked at verify-totp by result: success (TOTP or recovery code), wrong (also reused), throttled, overloaded (answered 503).",
		}, []string{"result"}),
		throttled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "nmauthd_client_throttled_total",
			Help: "Requests refused by the per-client limit before any secret was checked.",
		}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nmauthd_audit_events_total",
			Help: "Audit events of the library, by type.",
		}, []string{"type"}),
		storeTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "nmauthd_store_call_duration_seconds",
			Help:    "Time of one Store call, by operation.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}, []string{"op"}),
		storeErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nmauthd_store_errors_total",
			Help: "Store calls that failed for a reason other than a missing or existing record, by operation.",
		}, []string{"op"}),
	}
	// Every series a dashboard expects exists from the start, at zero.
	for _, result := range []string{resultSuccess, resultWrong, resultThrottled, resultOverloaded} {
		for _, kind := range []nmauth.PrincipalKind{nmauth.KindUser, nmauth.KindHost, nmauth.KindNode} {
			m.logins.WithLabelValues(string(kind), result)
		}
		m.totp.WithLabelValues(result)
	}
	for _, op := range storeOps {
		m.storeErrs.WithLabelValues(op)
	}
	m.registry.MustRegister(m.requests, m.latency, m.logins, m.totp, m.throttled, m.events,
		m.storeTime, m.storeErrs,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m, nil
}

// instrument makes cfg feed the metrics: its events after the hook it
// already has, and its Store through a timing wrapper.
func (m *metrics) instrument(cfg *nmauth.Config) {
	next := cfg.OnEvent
	cfg.OnEvent = func(ctx context.Context, e nmauth.Event) {
		m.observeEvent(e)
		if next != nil {
			next(ctx, e)
		}
	}
	if s, ok := cfg.Store.(fullStore); ok {
		cfg.Store = &timedStore{fullStore: s, m: m}
	}
}

// observeEvent counts one audit event. An event carries a name; no label
// is made from it, so that no username or host id reaches the metrics.
func (m *metrics) observeEvent(e nmauth.Event) {
	m.events.WithLabelValues(string(e.Type)).Inc()
	switch e.Type {
	case nmauth.EventLoginSucceeded, nmauth.EventLoginSecondFactorRequired:
		// The login route's answer: a right password that earned a
		// pre-auth token counts as the success it is there.
		m.logins.WithLabelValues(string(e.Kind), resultSuccess).Inc()
	case nmauth.EventLoginFailed:
		m.logins.WithLabelValues(string(e.Kind), resultWrong).Inc()
	case nmauth.EventLoginThrottled:
		m.logins.WithLabelValues(string(e.Kind), resultThrottled).Inc()
	case nmauth.EventTOTPVerified, nmauth.EventRecoveryCodeUsed:
		m.totp.WithLabelValues(resultSuccess).Inc()
	case nmauth.EventTOTPFailed, nmauth.EventTOTPReplayed:
		m.totp.WithLabelValues(resultWrong).Inc()
	case nmauth.EventTOTPThrottled:
		m.totp.WithLabelValues(resultThrottled).Inc()
	case nmauth.EventClientThrottled:
		m.throttled.Inc()
	}
}

// overloadRoutes are the routes whose 503 means an attempt the server
// could not take: the library sends no event for it, as nothing was
// checked. The value is the principal kind, or "" for verify-totp. The
// second node route is in the Netmaker profile's document only.
var overloadRoutes = map[string]string{
	"POST /api/users/adm/authenticate":            string(nmauth.KindUser),
	"POST /api/hosts/adm/authenticate":            string(nmauth.KindHost),
	"POST /api/nodes/{network}/authenticate":      string(nmauth.KindNode),
	"POST /api/nodes/adm/{network}/authenticate":  string(nmauth.KindNode),
	"POST /api/users/{username}/auth/verify-totp": "",
}

// handler counts and times every request by its route pattern, never by
// its path, which can hold a username.
func (m *metrics) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		route := m.routes.label(r)
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		status := rec.statusCode()
		m.latency.WithLabelValues(route).Observe(time.Since(start).Seconds())
		m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
		if kind, ok := overloadRoutes[route]; ok && status == http.StatusServiceUnavailable {
			if kind == "" {
				m.totp.WithLabelValues(resultOverloaded).Inc()
			} else {
				m.logins.WithLabelValues(kind, resultOverloaded).Inc()
			}
		}
	})
}

// observeAuthenticator adds what auth reports of itself: its
// password-hash queue, the lookups and entries of the two caches of its
// bearer check, and its per-client limit with the signs of a reverse
// proxy missing from --trusted-proxy. A scrape reads each series with one call of
// auth.Stats, which takes no lock and allocates nothing.
func (m *metrics) observeAuthenticator(auth *nmauth.Authenticator) {
	gauge := func(name, help string, labels prometheus.Labels, read func(nmauth.Stats) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels},
			func() float64 { return float64(read(auth.Stats())) })
	}
	const lookupsHelp = "Lookups of the bearer check's caches, by cache and result: a token hit spares a token's signature check, a status hit spares a Store read of the account."
	lookups := func(cache, result string, read func(nmauth.Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "nmauthd_bearer_cache_requests_total",
			Help:        lookupsHelp,
			ConstLabels: prometheus.Labels{"cache": cache, "result": result},
		}, func() float64 { return float64(read(auth.Stats())) })
	}
	counter := func(name, help string, read func(nmauth.Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return float64(read(auth.Stats())) })
	}
	const entriesHelp = "Entries held by the bearer check's caches, an estimate, by cache: token or status."
	m.registry.MustRegister(
		gauge("nmauthd_password_hash_slots_in_use", "Hashing slots held now by the password hashes and verifications running, one for each thread they run.", nil,
			func(s nmauth.Stats) int { return s.PasswordHashesRunning }),
		gauge("nmauthd_password_hash_waiting", "Logins and password changes waiting for a hashing slot now.", nil,
			func(s nmauth.Stats) int { return s.PasswordHashesWaiting }),
		lookups("token", "hit", func(s nmauth.Stats) uint64 { return s.TokenCache.Hits }),
		lookups("token", "miss", func(s nmauth.Stats) uint64 { return s.TokenCache.Misses }),
		lookups("status", "hit", func(s nmauth.Stats) uint64 { return s.StatusCache.Hits }),
		lookups("status", "miss", func(s nmauth.Stats) uint64 { return s.StatusCache.Misses }),
		gauge("nmauthd_bearer_cache_entries", entriesHelp, prometheus.Labels{"cache": "token"},
			func(s nmauth.Stats) int { return s.TokenCache.Size }),
		gauge("nmauthd_bearer_cache_entries", entriesHelp, prometheus.Labels{"cache": "status"},
			func(s nmauth.Stats) int { return s.StatusCache.Size }),
		gauge("nmauthd_client_addresses", "Client addresses the per-client limit holds a bucket for, an estimate.", nil,
			func(s nmauth.Stats) int { return s.ClientAddresses }),
		counter("nmauthd_client_forwarded_untrusted_total",
			"Login attempts carrying X-Forwarded-For or Forwarded from a peer that is not a trusted proxy: a proxy missing from --trusted-proxy, or a forged header (ignored).",
			func(s nmauth.Stats) uint64 { return s.ForwardedUntrusted }),
		counter("nmauthd_client_one_address_minutes_total",
			"Minutes in which one client address made most of the login attempts (at least 64): a proxy missing from --trusted-proxy, or one client hammering.",
			func(s nmauth.Stats) uint64 { return s.OneAddressMinutes }),
	)
}

// serveMux answers GET /metrics on the metrics listener.
func (m *metrics) serveMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{}))
	return mux
}

// routeLabeler names a request by the pattern of the operation of the
// OpenAPI document that it asks for, such as
// "POST /api/users/{username}/auth/init-totp", and every other request
// (the demo page, a wrong method, an unknown path) "other". The labels are
// bounded by the document, whatever the paths sent.
type routeLabeler struct {
	mux      *http.ServeMux
	patterns map[string]bool
}

func newRouteLabeler(doc []byte) (routeLabeler, error) {
	var d struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(doc, &d); err != nil {
		return routeLabeler{}, fmt.Errorf("reading the OpenAPI document: %w", err)
	}
	l := routeLabeler{mux: http.NewServeMux(), patterns: map[string]bool{}}
	noop := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for path, item := range d.Paths {
		for method := range item {
			if slices.Contains([]string{"get", "put", "post", "delete", "patch"}, method) {
				pattern := strings.ToUpper(method) + " " + path
				l.mux.Handle(pattern, noop)
				l.patterns[pattern] = true
			}
		}
	}
	if len(l.patterns) == 0 {
		return routeLabeler{}, errors.New("the OpenAPI document has no operations")
	}
	return l, nil
}

func (l routeLabeler) label(r *http.Request) string {
	// For a path it would redirect, ServeMux returns that path instead of
	// a pattern; only a pattern of the document may become a label.
	if _, p := l.mux.Handler(r); l.patterns[p] {
		return p
	}
	return "other"
}

// storeOps are the methods of nmauth.Store, the values of the op label.
var storeOps = []string{"GetUser", "ListUsers", "CreateUser", "UpdateUser", "DeleteUser",
	"GetHost", "ListHosts", "CreateHost", "UpdateHost", "DeleteHost"}

// timedStore times every call of the Store it wraps and counts its
// failures. ErrNotFound and ErrExists are answers, not failures, and
// neither is an error that the caller's update function returned.
type timedStore struct {
	fullStore
	m *metrics
}

// fullStore is a Store with the optional interface nmauthd's database
// has. The wrapper keeps it, so that the root-secret guard works the
// same with metrics on.
type fullStore interface {
	nmauth.Store
	nmauth.KeyCheckStore
}

// call runs one Store call and observes it. fnErr, if not nil, points to
// what the caller's update function last returned.
func call[T any](s *timedStore, op string, fnErr *error, do func() (T, error)) (T, error) {
	start := time.Now()
	v, err := do()
	s.m.storeTime.WithLabelValues(op).Observe(time.Since(start).Seconds())
	fromFn := fnErr != nil && err == *fnErr
	if err != nil && !fromFn && !errors.Is(err, nmauth.ErrNotFound) && !errors.Is(err, nmauth.ErrExists) {
		s.m.storeErrs.WithLabelValues(op).Inc()
	}
	return v, err
}

// update runs one UpdateUser or UpdateHost call and observes it.
func update[R any](s *timedStore, op string, fn func(*R) error, do func(func(*R) error) error) error {
	var fnErr error
	_, err := call(s, op, &fnErr, func() (struct{}, error) {
		return struct{}{}, do(func(r *R) error { fnErr = fn(r); return fnErr })
	})
	return err
}

// write runs one Store call that returns only an error and observes it.
func write(s *timedStore, op string, do func() error) error {
	_, err := call(s, op, nil, func() (struct{}, error) { return struct{}{}, do() })
	return err
}

func (s *timedStore) GetUser(ctx context.Context, name string) (nmauth.User, error) {
	return call(s, "GetUser", nil, func() (nmauth.User, error) { return s.fullStore.GetUser(ctx, name) })
}

func (s *timedStore) ListUsers(ctx context.Context, after string, limit int) ([]nmauth.User, error) {
	return call(s, "ListUsers", nil, func() ([]nmauth.User, error) { return s.fullStore.ListUsers(ctx, after, limit) })
}

func (s *timedStore) CreateUser(ctx context.Context, u nmauth.User) error {
	return write(s, "CreateUser", func() error { return s.fullStore.CreateUser(ctx, u) })
}

func (s *timedStore) UpdateUser(ctx context.Context, name string, fn func(*nmauth.User) error) error {
	return update(s, "UpdateUser", fn, func(f func(*nmauth.User) error) error { return s.fullStore.UpdateUser(ctx, name, f) })
}

func (s *timedStore) DeleteUser(ctx context.Context, name string) error {
	return write(s, "DeleteUser", func() error { return s.fullStore.DeleteUser(ctx, name) })
}

func (s *timedStore) GetHost(ctx context.Context, id string) (nmauth.Host, error) {
	return call(s, "GetHost", nil, func() (nmauth.Host, error) { return s.fullStore.GetHost(ctx, id) })
}

func (s *timedStore) ListHosts(ctx context.Context, after string, limit int) ([]nmauth.Host, error) {
	return call(s, "ListHosts", nil, func() ([]nmauth.Host, error) { return s.fullStore.ListHosts(ctx, after, limit) })
}

func (s *timedStore) CreateHost(ctx context.Context, h nmauth.Host) error {
	return write(s, "CreateHost", func() error { return s.fullStore.CreateHost(ctx, h) })
}

func (s *timedStore) UpdateHost(ctx context.Context, id string, fn func(*nmauth.Host) error) error {
	return update(s, "UpdateHost", fn, func(f func(*nmauth.Host) error) error { return s.fullStore.UpdateHost(ctx, id, f) })
}

func (s *timedStore) DeleteHost(ctx context.Context, id string) error {
	return write(s, "DeleteHost", func() error { return s.fullStore.DeleteHost(ctx, id) })
}

// observeLog counts the log lines dropped because the log's output did
// not keep up.
func (m *metrics) observeLog(w *logWriter) {
	m.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "nmauthd_log_lines_dropped_total",
		Help: "Log lines dropped because the log's output did not take them as fast as they came.",
	}, func() float64 { return float64(w.Dropped()) }))
}

// startMetrics serves the metrics on --metrics-addr, apart from the API so
// that they can be kept off the network the clients reach. The returned
// function stops that listener.
func startMetrics(o *options, m *metrics, log *slog.Logger) (func(), error) {
	ln, err := listen(o.metricsAddr, o.dev)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	srv := newHTTPServer(m.serveMux(), log)
	go srv.Serve(ln)
	log.Info("metrics listening", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		srv.Shutdown(ctx)
	}, nil
}
