package sso

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	"github.com/nmauth/nmauth"
)

// Pending is a login sent to the provider and not back yet.
type Pending struct {
	Nonce, Verifier string
	// Binding is the SHA-256, in hex, of the cookie value of the browser
	// that started the login; empty for a headless login.
	Binding  string
	Headless bool
	Expires  time.Time
}

// Store keeps what single sign-on shares across replicas: the pending
// logins, each taken once; the results of headless logins, for the
// replica that holds the websocket; and the links of identities to users.
//
// TakeState and TakeResult remove what they return, so that two replicas
// never both take it, and return [nmauth.ErrNotFound] for a key that is
// missing or expired at now. Link returns [nmauth.ErrNotFound] for an
// identity linked to no user.
type Store interface {
	PutState(ctx context.Context, state string, p Pending) error
	TakeState(ctx context.Context, state string, now time.Time) (Pending, error)
	PutResult(ctx context.Context, state, result string, expires time.Time) error
	TakeResult(ctx context.Context, state string, now time.Time) (string, error)
	Link(ctx context.Context, issuer, subject string) (string, error)
	AddLink(ctx context.Context, issuer, subject, username string) error
}

// MemoryStore is a [Store] in memory, for one process.
type MemoryStore struct {
	mu      sync.Mutex
	states  map[string]Pending
	results map[string]result
	links   map[[2]string]string
}

type result struct {
	text    string
	expires time.Time
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{states: map[string]Pending{}, results: map[string]result{}, links: map[[2]string]string{}}
}

// PutState implements [Store]; expired states go first.
func (m *MemoryStore) PutState(_ context.Context, state string, p Pending) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	for k, v := range m.states {
		if !now.Before(v.Expires) {
			delete(m.states, k)
		}
	}
	m.states[state] = p
	return nil
}

// TakeState implements [Store].
func (m *MemoryStore) TakeState(_ context.Context, state string, now time.Time) (Pending, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.states[state]
	delete(m.states, state)
	if !ok || !now.Before(p.Expires) {
		return Pending{}, nmauth.ErrNotFound
	}
	return p, nil
}

// PutResult implements [Store].
func (m *MemoryStore) PutResult(_ context.Context, state, text string, expires time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.results[state] = result{text, expires}
	return nil
}

// TakeResult implements [Store].
func (m *MemoryStore) TakeResult(_ context.Context, state string, now time.Time) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.results[state]
	if !ok || !now.Before(r.expires) {
		return "", nmauth.ErrNotFound
	}
	delete(m.results, state)
	return r.text, nil
}

// Link implements [Store].
func (m *MemoryStore) Link(_ context.Context, issuer, subject string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name, ok := m.links[[2]string{issuer, subject}]
	if !ok {
		return "", nmauth.ErrNotFound
	}
	return name, nil
}

// AddLink implements [Store].
func (m *MemoryStore) AddLink(_ context.Context, issuer, subject, username string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.links[[2]string{issuer, subject}] = username
	return nil
}

// SQLStore is a [Store] in the SQL database of an [nmauth.SQLStore],
// through database/sql, in tables of its own that it creates. Several
// replicas share it.
type SQLStore struct {
	db      *sql.DB
	dialect nmauth.Dialect
}

// NewSQLStore creates the tables when they are missing and returns the
// store.
func NewSQLStore(ctx context.Context, db *sql.DB, d nmauth.Dialect) (*SQLStore, error) {
	s := &SQLStore{db: db, dialect: d}
	for _, stmt := range []string{
		`CREATE TABLE IF NOT EXISTS nmauth_sso_states (state TEXT NOT NULL PRIMARY KEY, nonce TEXT NOT NULL,
			verifier TEXT NOT NULL, binding TEXT NOT NULL, headless BOOLEAN NOT NULL, expires BIGINT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS nmauth_sso_results (state TEXT NOT NULL PRIMARY KEY, result TEXT NOT NULL,
			expires BIGINT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS nmauth_sso_links (issuer TEXT NOT NULL, subject TEXT NOT NULL,
			username TEXT NOT NULL, PRIMARY KEY (issuer, subject))`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// q writes the ? placeholders of query as PostgreSQL's $n.
func (s *SQLStore) q(query string) string { return s.dialect.Rebind(query) }

// PutState implements [Store]; expired states and results go first.
func (s *SQLStore) PutState(ctx context.Context, state string, p Pending) error {
	now := time.Now().UnixNano()
	for _, table := range []string{"nmauth_sso_states", "nmauth_sso_results"} {
		if _, err := s.db.ExecContext(ctx, s.q("DELETE FROM "+table+" WHERE expires <= ?"), now); err != nil {
			return err
		}
	}
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO nmauth_sso_states (state, nonce, verifier, binding, headless, expires)
		VALUES (?, ?, ?, ?, ?, ?)`), state, p.Nonce, p.Verifier, p.Binding, p.Headless, p.Expires.UnixNano())
	return err
}

// TakeState implements [Store] with one DELETE … RETURNING, so that of
// two replicas taking one state only one gets it.
func (s *SQLStore) TakeState(ctx context.Context, state string, now time.Time) (Pending, error) {
	var p Pending
	var expires int64
	err := s.db.QueryRowContext(ctx, s.q(`DELETE FROM nmauth_sso_states WHERE state = ?
		RETURNING nonce, verifier, binding, headless, expires`), state).Scan(&p.Nonce, &p.Verifier, &p.Binding, &p.Headless, &expires)
	if errors.Is(err, sql.ErrNoRows) || err == nil && expires <= now.UnixNano() {
		return Pending{}, nmauth.ErrNotFound
	}
	p.Expires = time.Unix(0, expires)
	return p, err
}

// PutResult implements [Store].
func (s *SQLStore) PutResult(ctx context.Context, state, text string, expires time.Time) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO nmauth_sso_results (state, result, expires) VALUES (?, ?, ?)`),
		state, text, expires.UnixNano())
	return err
}

// TakeResult implements [Store].
func (s *SQLStore) TakeResult(ctx context.Context, state string, now time.Time) (string, error) {
	var text string
	var expires int64
	err := s.db.QueryRowContext(ctx, s.q(`DELETE FROM nmauth_sso_results WHERE state = ? RETURNING result, expires`),
		state).Scan(&text, &expires)
	if errors.Is(err, sql.ErrNoRows) || err == nil && expires <= now.UnixNano() {
		return "", nmauth.ErrNotFound
	}
	return text, err
}

// Link implements [Store].
func (s *SQLStore) Link(ctx context.Context, issuer, subject string) (string, error) {
	var name string
	err := s.db.QueryRowContext(ctx, s.q(`SELECT username FROM nmauth_sso_links WHERE issuer = ? AND subject = ?`),
		issuer, subject).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nmauth.ErrNotFound
	}
	return name, err
}

// AddLink implements [Store].
func (s *SQLStore) AddLink(ctx context.Context, issuer, subject, username string) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO nmauth_sso_links (issuer, subject, username) VALUES (?, ?, ?)
		ON CONFLICT (issuer, subject) DO UPDATE SET username = excluded.username`), issuer, subject, username)
	return err
}
