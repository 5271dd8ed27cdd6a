package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/nmauth/nmauth"
)

// logBuffer is a log that goroutines may write while the test reads it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// netmakerJWTSecret is the privatekey of the test's nm-jwt-secret.
const netmakerJWTSecret = "netmaker-jwt-secret-of-the-test-0123456789abcdefghijklmnopqrstuv"

// TestNetmakerStoreLive runs the Store of serve --netmaker-db over
// nmauthd's own database on SQLite and on PostgreSQL, with a
// Netmaker-shaped SQLite database that the test changes as Netmaker's
// server would.
func TestNetmakerStoreLive(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) { testNetmakerStoreLive(t, filepath.Join(t.TempDir(), "nmauth.db")) })
	t.Run("PostgreSQL", func(t *testing.T) { testNetmakerStoreLive(t, postgresDSN(t)) })
}

// netmakerFront is an Authenticator over the Store of serve
// --netmaker-db, with the reader's clock in the test's hands.
type netmakerFront struct {
	auth *nmauth.Authenticator
	live *netmakerStore
	nm   *sql.DB // Netmaker's database, writable, as its server has it
	now  time.Time
	logs *logBuffer // the log, at debug
}

// newNetmakerFront runs frontNetmaker over own as nmauthd's --db, with
// serve's options as tweak sets them.
func newNetmakerFront(t *testing.T, own string, tweak ...func(*options)) *netmakerFront {
	t.Helper()
	ctx := context.Background()
	src := netmakerSQLite(t)
	nm, err := sql.Open("sqlite", src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nm.Close() })
	conf, _ := json.Marshal(map[string]string{"privatekey": netmakerJWTSecret})
	if _, err := nm.Exec("CREATE TABLE serverconf (key TEXT NOT NULL UNIQUE PRIMARY KEY, value TEXT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := nm.Exec("INSERT INTO serverconf VALUES ('nm-jwt-secret', ?)", string(conf)); err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	db, err := openDatabase(ctx, own, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	secret := make([]byte, 32)
	rand.Read(secret)
	cfg := nmauth.Config{Store: db, Secrets: [][]byte{secret}, Wire: nmauth.WireNetmaker, ClientRate: -1, StatusCacheTTL: -1, Logger: log}
	f := &netmakerFront{nm: nm, logs: logs}
	o := &options{netmakerDB: src}
	for _, fn := range tweak {
		fn(o)
	}
	if f.live, err = frontNetmaker(ctx, o, db, cfg.Secrets, &cfg, log); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.live.close)
	// The reader's clock starts no earlier than its reads at start.
	f.now = time.Now()
	f.live.nm.now = func() time.Time { return f.now }
	if f.auth, err = nmauth.New(cfg); err != nil {
		t.Fatal(err)
	}
	f.live.serves(f.auth)
	return f
}

// netmakerDump hashes Netmaker's tables.
func (f *netmakerFront) netmakerDump(t *testing.T) string {
	t.Helper()
	h := sha256.New()
	for _, table := range []string{"users", "hosts", "nodes", "server_settings", "serverconf"} {
		rows, err := f.nm.Query("SELECT key, value FROM " + table + " ORDER BY key")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var k, v string
			rows.Scan(&k, &v)
			fmt.Fprintf(h, "%s\x00%s\x00%s\n", table, k, v)
		}
		rows.Close()
	}
	return hex.EncodeToString(h.Sum(nil))
}

// setUser writes a user's record as Netmaker's server does, and lets the
// reader's last read of it age out.
func (f *netmakerFront) setUser(t *testing.T, name string, fields map[string]any) {
	t.Helper()
	b, _ := json.Marshal(fields)
	if _, err := f.nm.Exec("INSERT INTO users (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", name, string(b)); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(netmakerReadTTL)
}

func testNetmakerStoreLive(t *testing.T, own string) {
	f := newNetmakerFront(t, own)
	ctx := context.Background()
	before := f.netmakerDump(t)

	// alice logs in with Netmaker's hash; the token is Netmaker's, and
	// her hash in --db is nmauth's from then on.
	login, err := f.auth.LoginUser(ctx, "alice", "alice's password")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		UserName, Role, TokenType string
		jwt.RegisteredClaims
	}
	if _, err := jwt.ParseWithClaims(login.AuthToken, &c, func(*jwt.Token) (any, error) { return []byte(netmakerJWTSecret), nil }); err != nil ||
		c.UserName != "alice" || c.Role != "super-admin" || c.Subject != "user|alice" || c.ExpiresAt.Sub(c.IssuedAt.Time) != 12*time.Hour {
		t.Fatalf("alice's token under Netmaker's secret: %+v, %v", c, err)
	}
	if u, err := f.live.database.GetUser(ctx, "alice"); err != nil || !strings.HasPrefix(u.PasswordHash, "$argon2id$") {
		t.Fatalf("alice in --db after her login: %q, %v; want an argon2id hash", u.PasswordHash, err)
	}
	f.now = f.now.Add(time.Hour)
	if _, err := f.auth.LoginUser(ctx, "alice", "alice's password"); err != nil {
		t.Fatalf("alice's second login, on the upgraded hash: %v", err)
	}
	if _, err := f.auth.LoginHost(ctx, importHostID, "aa:bb:cc:dd:ee:01", importHostSecret); err != nil {
		t.Fatalf("the host's login: %v", err)
	}
	if _, err := f.auth.LoginUser(ctx, "carol", "carol's password"); !errors.Is(err, nmauth.ErrInvalidCredentials) {
		t.Fatalf("carol, disabled in Netmaker: %v", err)
	}
	if f.netmakerDump(t) != before {
		t.Fatal("logins changed Netmaker's tables")
	}

	// A new password in Netmaker: the upgraded hash is dropped, the old
	// password and the sessions it earned end.
	f.setUser(t, "alice", map[string]any{"username": "alice", "password": bcrypt5(t, "alice's new password"), "platform_role_id": "admin"})
	if _, err := f.auth.LoginUser(ctx, "alice", "alice's password"); !errors.Is(err, nmauth.ErrInvalidCredentials) {
		t.Errorf("alice's old password after Netmaker changed it: %v", err)
	}
	if _, err := f.auth.CheckBearer(ctx, login.AuthToken); !errors.Is(err, nmauth.ErrUnauthenticated) {
		t.Errorf("the old password's token at nmauthd: %v", err)
	}
	if _, err := f.auth.LoginUser(ctx, "alice", "alice's new password"); err != nil {
		t.Errorf("alice's new password: %v", err)
	}

	// Enabled in Netmaker, carol logs in; disabled again, she does not.
	f.setUser(t, "carol", map[string]any{"username": "carol", "password": bcrypt5(t, "carol's password")})
	if _, err := f.auth.LoginUser(ctx, "carol", "carol's password"); err != nil {
		t.Errorf("carol, enabled in Netmaker: %v", err)
	}
	f.setUser(t, "carol", map[string]any{"username": "carol", "password": bcrypt5(t, "carol's password"), "account_disabled": true})
	if _, err := f.auth.LoginUser(ctx, "carol", "carol's password"); !errors.Is(err, nmauth.ErrInvalidCredentials) {
		t.Errorf("carol, disabled again in Netmaker: %v", err)
	}

	// Deleted in Netmaker: unknown, and forgotten in --db.
	if _, err := f.nm.Exec("DELETE FROM users WHERE key = 'alice'"); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(netmakerReadTTL)
	if _, err := f.auth.LoginUser(ctx, "alice", "alice's new password"); !errors.Is(err, nmauth.ErrInvalidCredentials) {
		t.Errorf("alice, deleted in Netmaker: %v", err)
	}
	if _, err := f.live.database.GetUser(ctx, "alice"); !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("alice in --db once Netmaker deleted her: %v", err)
	}
	// Made again in Netmaker, under another case, she logs in afresh.
	f.setUser(t, "Alice", map[string]any{"username": "Alice", "password": bcrypt5(t, "a third password"), "platform_role_id": "admin"})
	again, err := f.auth.LoginUser(ctx, "alice", "a third password")
	if err != nil {
		t.Fatalf("Alice, made again in Netmaker: %v", err)
	}
	c.UserName = ""
	jwt.ParseWithClaims(again.AuthToken, &c, func(*jwt.Token) (any, error) { return []byte(netmakerJWTSecret), nil })
	if c.UserName != "Alice" || c.Subject != "user|Alice" {
		t.Errorf("the token names %q (%s), want the name Netmaker keys her by, Alice", c.UserName, c.Subject)
	}
	if logs := f.logs.String(); !strings.Contains(logs, "in front of Netmaker") || strings.Contains(logs, netmakerJWTSecret) {
		t.Errorf("the log does not say the mode, or holds Netmaker's secret:\n%s", logs)
	}
}
