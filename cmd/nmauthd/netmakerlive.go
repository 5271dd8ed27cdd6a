package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nmauth/nmauth"
)

// In front of an unchanged Netmaker server (serve --netmaker-db), nmauthd
// reads Netmaker's accounts from its database on each use, over a
// connection that cannot write: a SQLite file opened read-only and
// query_only, a PostgreSQL session whose transactions are read-only by
// default. It never writes Netmaker's tables; what is nmauth's own lives
// in --db (see netmakerStore).

// netmakerReadTTL is how long a record read from Netmaker's database
// serves the reads of one login before it is read again: a login reads
// its account several times within milliseconds, and a change made in
// Netmaker is seen within this time.
const netmakerReadTTL = time.Second

// maxNetmakerCached bounds each cache of the live mode; past it the cache
// starts again empty, so that names that do not exist cannot fill memory.
const maxNetmakerCached = 100000

// netmakerLiveUser is what nmauthd reads of a Netmaker user.
type netmakerLiveUser struct {
	netmakerUser
	// Key is the user's key in Netmaker's users table, the name its
	// server looks up when it checks a token.
	Key  string `json:"-"`
	Role string `json:"platform_role_id"`
}

// external reports whether the user signs in through single sign-on.
func (u *netmakerLiveUser) external() bool { return u.ExternalID != "" || u.AuthType == "oauth" }

// netmakerReader reads Netmaker's database live.
type netmakerReader struct {
	db       *sql.DB
	postgres bool
	// name is safe to log.
	name string

	mu       sync.Mutex
	users    map[string]cachedRead[netmakerLiveUser]
	hosts    map[string]cachedRead[netmakerHost]
	settings cachedRead[netmakerUserTTLs]
	now      func() time.Time
}

// cachedRead is a record read from Netmaker, or its absence (found false).
type cachedRead[T any] struct {
	v     T
	found bool
	at    time.Time
}

// openNetmakerLive opens Netmaker's database for live reads and checks
// that it is one: its users table answers.
func openNetmakerLive(ctx context.Context, from string) (*netmakerReader, error) {
	r := &netmakerReader{users: map[string]cachedRead[netmakerLiveUser]{}, hosts: map[string]cachedRead[netmakerHost]{}, now: time.Now}
	var err error
	if isPostgresDSN(from) {
		r.postgres = true
		if r.name, err = postgresConfig(from); err != nil {
			return nil, errors.New("--netmaker-db: the PostgreSQL DSN does not parse")
		}
		r.db, err = sql.Open("pgx", readOnlyPostgresDSN(from))
	} else {
		if _, serr := os.Stat(from); serr != nil {
			return nil, fmt.Errorf("--netmaker-db: %w", serr)
		}
		r.name = from
		r.db, err = sql.Open("sqlite", sqliteLiveReadDSN(from))
	}
	if err != nil {
		return nil, fmt.Errorf("opening Netmaker's database: %w", err)
	}
	r.db.SetMaxOpenConns(4)
	r.db.SetMaxIdleConns(4)
	var n int
	if err := r.db.QueryRowContext(ctx, "SELECT count(*) FROM users").Scan(&n); err != nil {
		r.db.Close()
		return nil, fmt.Errorf("reading Netmaker's users table in %s (is --netmaker-db Netmaker's database?): %w", r.name, err)
	}
	return r, nil
}

// readOnlyPostgresDSN makes every transaction of the session read-only:
// PostgreSQL itself then refuses any write on the connection.
func readOnlyPostgresDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set("default_transaction_read_only", "on")
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " default_transaction_read_only=on"
}

// sqliteLiveReadDSN opens path read-only and query_only while Netmaker
// writes it (not immutable, as the import does: the file changes), and
// waits for Netmaker's write lock rather than fail.
func sqliteLiveReadDSN(path string) string {
	p := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	if strings.HasPrefix(p, "/") {
		p = "//" + p
	}
	return "file:" + p + "?mode=ro&_pragma=query_only(1)&_pragma=busy_timeout(2000)"
}

func (r *netmakerReader) close() error { return r.db.Close() }

// rebind rewrites ? as $1, $2 on PostgreSQL.
func (r *netmakerReader) rebind(q string) string {
	if r.postgres {
		return nmauth.DialectPostgres.Rebind(q)
	}
	return q
}

// value reads one record of a Netmaker table by key; ok is false when
// there is none. The table names are Netmaker's constants, never input.
func (r *netmakerReader) value(ctx context.Context, table, key string) (v string, ok bool, err error) {
	var s sql.NullString
	err = r.db.QueryRowContext(ctx, r.rebind("SELECT value FROM "+table+" WHERE key = ?"), key).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("reading Netmaker's %s table: %w", table, err)
	}
	return s.String, true, nil
}

// jwtSecret reads the key Netmaker signs its tokens with.
func (r *netmakerReader) jwtSecret(ctx context.Context) ([]byte, error) {
	v, ok, err := r.value(ctx, "serverconf", "nm-jwt-secret")
	if err != nil {
		return nil, err
	}
	var c struct {
		PrivateKey string `json:"privatekey"`
	}
	if !ok || json.Unmarshal([]byte(v), &c) != nil || c.PrivateKey == "" {
		return nil, fmt.Errorf("Netmaker's database %s holds no JWT secret (serverconf nm-jwt-secret): start Netmaker's server once first", r.name)
	}
	return []byte(c.PrivateKey), nil
}

// Netmaker's server gives a user token one of two lifetimes, by the
// client that logs in, as X-Application-Name names it: netclient and
// netmaker-desktop (the name of a login that sends none) get
// jwt_validity_duration_clients, any other (the web UI)
// jwt_validity_duration; both in minutes in its server settings.
const (
	netmakerNetclientApp = "netclient"
	netmakerDesktopApp   = "netmaker-desktop"
)

// netmakerDefaultUserTTL is Netmaker's lifetime of a user token when its
// settings hold none: its default JWT_VALIDITY_DURATION, 43200 s.
const netmakerDefaultUserTTL = 12 * time.Hour

// netmakerLongestUserTTL is the longest lifetime nmauthd gives a user
// token in front of Netmaker, and its bearer check accepts: a year, the
// most Netmaker's server takes for jwt_validity_duration.
const netmakerLongestUserTTL = 525600 * time.Minute

// netmakerUserTTLs are Netmaker's two lifetimes of a user token.
type netmakerUserTTLs struct {
	// UI is jwt_validity_duration, for a login of the web UI (or of any
	// client but netclient and netmaker-desktop).
	UI time.Duration
	// Clients is jwt_validity_duration_clients, for netclient and
	// netmaker-desktop, and a login that names no client (nmctl).
	Clients time.Duration
}

// forApp is the lifetime Netmaker gives a login of the client app names.
func (l netmakerUserTTLs) forApp(app string) time.Duration {
	if app == "" || app == netmakerNetclientApp || app == netmakerDesktopApp {
		return l.Clients
	}
	return l.UI
}

// userTokenTTLs reads Netmaker's lifetimes of user tokens from its
// server settings (server_settings, key server_cfg); a read serves for
// netmakerReadTTL, so that a change made in Netmaker holds for the next
// logins. A lifetime the settings do not set is Netmaker's default.
func (r *netmakerReader) userTokenTTLs(ctx context.Context) (netmakerUserTTLs, error) {
	r.mu.Lock()
	c := r.settings
	r.mu.Unlock()
	if c.found && r.now().Sub(c.at) < netmakerReadTTL {
		return c.v, nil
	}
	v, ok, err := r.value(ctx, "server_settings", "server_cfg")
	if err != nil {
		return netmakerUserTTLs{}, err
	}
	var s struct {
		UI      int `json:"jwt_validity_duration"`
		Clients int `json:"jwt_validity_duration_clients"`
	}
	if ok && json.Unmarshal([]byte(v), &s) != nil {
		s.UI, s.Clients = 0, 0
	}
	minutes := func(m int) time.Duration {
		switch {
		case m <= 0:
			return netmakerDefaultUserTTL
		case m > int(netmakerLongestUserTTL/time.Minute):
			// Past the longest, and before the product overflows.
			return netmakerLongestUserTTL
		}
		return time.Duration(m) * time.Minute
	}
	l := netmakerUserTTLs{UI: minutes(s.UI), Clients: minutes(s.Clients)}
	r.mu.Lock()
	r.settings = cachedRead[netmakerUserTTLs]{v: l, found: true, at: r.now()}
	r.mu.Unlock()
	return l, nil
}

// userTokenLifetime is the Config.UserTokenLifetime of the live mode: the
// lifetime Netmaker's server would give the token of this login, by the
// client its request names (see withApplicationName), as Netmaker's
// settings say now.
func (r *netmakerReader) userTokenLifetime(ctx context.Context, _ string) (time.Duration, error) {
	l, err := r.userTokenTTLs(ctx)
	if err != nil {
		return 0, err
	}
	return l.forApp(applicationName(ctx)), nil
}

// applicationKey is the context key of the client a request names.
type applicationKey struct{}

// withApplication returns ctx naming the client app, as a request's
// X-Application-Name names it.
func withApplication(ctx context.Context, app string) context.Context {
	return context.WithValue(ctx, applicationKey{}, app)
}

// applicationName is the client ctx names, "" for none.
func applicationName(ctx context.Context) string {
	app, _ := ctx.Value(applicationKey{}).(string)
	return app
}

// withApplicationName passes each request's X-Application-Name to the
// Authenticator in its context, where userTokenLifetime reads it.
func withApplicationName(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if app := r.Header.Get("X-Application-Name"); app != "" {
			r = r.WithContext(withApplication(r.Context(), app))
		}
		h.ServeHTTP(w, r)
	})
}

// user reads the Netmaker user whose name prepares to name (see
// nmauth.PrepareUsername): the record keyed name, else one keyed in
// another case. found is false when Netmaker has none.
func (r *netmakerReader) user(ctx context.Context, name string) (u netmakerLiveUser, found bool, err error) {
	if c, ok := r.cachedUser(name); ok {
		return c.v, c.found, nil
	}
	key, v, ok, err := r.userRecord(ctx, name)
	if err != nil {
		return u, false, err
	}
	if ok {
		if err := json.Unmarshal([]byte(v), &u); err != nil {
			return u, false, &nmauth.BrokenRecordError{Kind: "user", Key: name, Column: "Netmaker's users.value", Err: err}
		}
		u.Key = key
	}
	r.mu.Lock()
	if len(r.users) >= maxNetmakerCached {
		clear(r.users)
	}
	r.users[name] = cachedRead[netmakerLiveUser]{v: u, found: ok, at: r.now()}
	r.mu.Unlock()
	return u, ok, nil
}

// userRecord reads the user keyed name, or in another case of it.
func (r *netmakerReader) userRecord(ctx context.Context, name string) (key, value string, ok bool, err error) {
	if v, ok, err := r.value(ctx, "users", name); err != nil || ok {
		return name, v, ok, err
	}
	rows, err := r.db.QueryContext(ctx, r.rebind("SELECT key, value FROM users WHERE lower(key) = ?"), strings.ToLower(name))
	if err != nil {
		return "", "", false, fmt.Errorf("reading Netmaker's users table: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var v sql.NullString
		if err := rows.Scan(&k, &v); err != nil {
			return "", "", false, fmt.Errorf("reading Netmaker's users table: %w", err)
		}
		if p, perr := nmauth.PrepareUsername(k); perr == nil && p == name {
			return k, v.String, true, nil
		}
	}
	return "", "", false, rows.Err()
}

func (r *netmakerReader) cachedUser(name string) (cachedRead[netmakerLiveUser], bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.users[name]
	if !ok || r.now().Sub(c.at) >= netmakerReadTTL {
		delete(r.users, name)
		return c, false
	}
	return c, true
}

// lastUser is the user as last read, for the claims of the token of a
// login that has just read it; it reads again if that read is gone.
func (r *netmakerReader) lastUser(name string) (key, role string, err error) {
	r.mu.Lock()
	c, ok := r.users[name]
	r.mu.Unlock()
	if !ok {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if c.v, c.found, err = r.user(ctx, name); err != nil {
			return "", "", err
		}
	}
	if !c.found {
		return "", "", fmt.Errorf("no Netmaker user %q", name)
	}
	return c.v.Key, c.v.Role, nil
}

// host reads the Netmaker host of id (a lower-case UUID, as Netmaker
// keys its hosts).
func (r *netmakerReader) host(ctx context.Context, id string) (h netmakerHost, found bool, err error) {
	r.mu.Lock()
	c, ok := r.hosts[id]
	r.mu.Unlock()
	if ok && r.now().Sub(c.at) < netmakerReadTTL {
		return c.v, c.found, nil
	}
	v, found, err := r.value(ctx, "hosts", id)
	if err != nil {
		return h, false, err
	}
	if found {
		if err := json.Unmarshal([]byte(v), &h); err != nil {
			return h, false, &nmauth.BrokenRecordError{Kind: "host", Key: id, Column: "Netmaker's hosts.value", Err: err}
		}
	}
	r.mu.Lock()
	if len(r.hosts) >= maxNetmakerCached {
		clear(r.hosts)
	}
	r.hosts[id] = cachedRead[netmakerHost]{v: h, found: found, at: r.now()}
	r.mu.Unlock()
	return h, found, nil
}

// mac is the host's MAC address in nmauth's form, "" for none.
func netmakerMAC(h netmakerHost) string {
	if len(h.MacAddress) == 0 {
		return ""
	}
	return net.HardwareAddr(h.MacAddress).String()
}

// isMember is the Config.NodeMember of the live mode: whether Netmaker
// holds a node of the host in the network.
func (r *netmakerReader) isMember(ctx context.Context, network, hostID string) (bool, error) {
	found := false
	err := r.withField(ctx, "nodes", "hostid", hostID, func(_ string, v []byte) bool {
		var n netmakerNode
		found = json.Unmarshal(v, &n) == nil && strings.EqualFold(n.HostID, hostID) && n.Network == network
		return found
	})
	return found, err
}

// userByExternalID reads the key of the Netmaker user whose single
// sign-on identity is subject.
func (r *netmakerReader) userByExternalID(ctx context.Context, subject string) (key string, found bool, err error) {
	err = r.withField(ctx, "users", "external_identity_provider_id", subject, func(k string, v []byte) bool {
		var u netmakerUser
		found = json.Unmarshal(v, &u) == nil && u.ExternalID == subject
		key = k
		return found
	})
	return key, found, err
}

// withField calls fn with the records of a Netmaker table whose JSON
// value may hold field with the string value, until fn returns true. The
// records are found by the bytes encoding/json writes for the pair, as
// Netmaker writes them, and fn decodes each to be sure: a database's
// JSON functions would fail the whole query on one malformed record.
func (r *netmakerReader) withField(ctx context.Context, table, field, value string, fn func(key string, value []byte) bool) error {
	pair, _ := json.Marshal(map[string]string{field: value})
	pattern := "%" + strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(string(pair[1:len(pair)-1])) + "%"
	rows, err := r.db.QueryContext(ctx, r.rebind("SELECT key, value FROM "+table+` WHERE value LIKE ? ESCAPE '\'`), pattern)
	if err != nil {
		return fmt.Errorf("reading Netmaker's %s table: %w", table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var v sql.NullString
		if err := rows.Scan(&k, &v); err != nil {
			return fmt.Errorf("reading Netmaker's %s table: %w", table, err)
		}
		if fn(k, []byte(v.String)) {
			return nil
		}
	}
	return rows.Err()
}
