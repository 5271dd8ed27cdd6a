package sso

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/internal/expiry"
)

// Pending is a login sent to the provider and not back yet.
type Pending struct {
	Nonce, Verifier string
	// Binding is the SHA-256, in hex, of the cookie value of the browser
	// that started the login; empty for a headless login.
	Binding  string
	Headless bool
	// Group is the client group that began the login (an IPv4 /24 or
	// IPv6 /56, as text), which holds a share of the pending logins;
	// empty for a request that named no client.
	Group   string
	Expires time.Time
}

// Room is how many pending logins a Store may hold: Total in all, and a
// client group at most Group of them, fewer as they fill (see PutState).
// A Group of 0 gives the groups no share: only Total bounds them.
type Room struct {
	Total, Group int
}

// Store keeps what single sign-on shares across replicas: the pending
// logins, each taken once; the results of headless logins, for the
// replica that holds the websocket; and the links of identities to users.
//
// PutState drops the states and results that have expired, finding them
// without reading the live ones, then stores p if its group has room: a
// group that holds held live states, with used live in all, may put
// another only while held < room.Group and used < room.Total × (1 −
// held/room.Group). Without room it stores nothing and fails with
// [ErrGroupShare] when p's group holds a state already. When all
// room.Total are taken and p's group holds none, p takes the place of the
// oldest state of the group that holds the most, if that group holds two
// or more, so that groups that come once all is taken still get in;
// else it fails with [ErrPendingFull]. Its counts, its push and its
// insert are one atomic step across replicas, so that the states never
// number more than room.Total, nor a group's more than its share. Results
// are bounded with them: a result is put only for a state taken.
//
// TakeState and TakeResult remove what they return, so that two replicas
// never both take it, and return [nmauth.ErrNotFound] for a key that is
// missing or expired at now. Link returns [nmauth.ErrNotFound] for an
// identity linked to no user.
type Store interface {
	PutState(ctx context.Context, state string, p Pending, room Room) error
	TakeState(ctx context.Context, state string, now time.Time) (Pending, error)
	PutResult(ctx context.Context, state, result string, expires time.Time) error
	TakeResult(ctx context.Context, state string, now time.Time) (string, error)
	Link(ctx context.Context, issuer, subject string) (string, error)
	AddLink(ctx context.Context, issuer, subject, username string) error
}

// ErrPendingFull is a login begun while the Store holds
// [Config.MaxPending] pending logins already, none of which it may push
// out (no group holds two, or the groups have no share): 503 with
// Retry-After.
var ErrPendingFull = errors.New("sso: too many logins pending")

// MemoryStore is a [Store] in memory, for one process.
type MemoryStore struct {
	mu      sync.Mutex
	states  map[string]Pending
	results map[string]result
	links   map[[2]string]string
	// groups counts the states of each client group.
	groups map[string]int
	// expiries holds the states and results by expiry, soonest first, so
	// that a put drops the expired ones without a scan. An entry of one
	// taken stays until it comes up, or until they outnumber the states
	// and results twice over and the heap is built again.
	expiries expiry.Heap[expiring]
}

// expiring is what an entry of the expiries names: the state or the
// result of key.
type expiring struct {
	key    string
	result bool
}

type result struct {
	text    string
	expires time.Time
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{states: map[string]Pending{}, results: map[string]result{}, links: map[[2]string]string{},
		groups: map[string]int{}}
}

// PutState implements [Store].
func (m *MemoryStore) PutState(_ context.Context, state string, p Pending, room Room) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dropExpired(time.Now())
	err := roomError(len(m.states), m.groups[p.Group], room)
	if errors.Is(err, ErrPendingFull) && room.Group > 0 && m.pushOut() {
		err = nil
	}
	if err != nil {
		return err
	}
	if old, ok := m.states[state]; ok {
		m.forget(old)
	}
	m.states[state] = p
	m.groups[p.Group]++
	m.expire(p.Expires, expiring{state, false})
	return nil
}

// dropExpired drops the states and results that expired before now.
func (m *MemoryStore) dropExpired(now time.Time) {
	m.expiries.PopDue(now, func(e expiring, at time.Time) {
		if e.result {
			if r, ok := m.results[e.key]; ok && r.expires.Equal(at) {
				delete(m.results, e.key)
			}
		} else if p, ok := m.states[e.key]; ok && p.Expires.Equal(at) {
			delete(m.states, e.key)
			m.forget(p)
		}
	})
}

// pushOut drops the oldest state of the group that holds the most, if
// it holds two or more. It reads every group and that group's states:
// it runs only once all places are taken, for a group that holds none.
func (m *MemoryStore) pushOut() bool {
	largest, most := "", 1
	for g, n := range m.groups {
		if n > most {
			largest, most = g, n
		}
	}
	if most < 2 {
		return false
	}
	oldest, first := "", time.Time{}
	for k, p := range m.states {
		if p.Group == largest && (oldest == "" || p.Expires.Before(first)) {
			oldest, first = k, p.Expires
		}
	}
	m.forget(m.states[oldest])
	delete(m.states, oldest)
	return true
}

// forget takes a state that leaves off its group's count.
func (m *MemoryStore) forget(p Pending) {
	if m.groups[p.Group]--; m.groups[p.Group] <= 0 {
		delete(m.groups, p.Group)
	}
}

// roomError is nil when a group that holds held states, with used in
// all, may put another within room (see [roomFor]), else the error that
// says which bound it meets.
func roomError(used, held int, room Room) error {
	switch {
	case room.Group <= 0 && used < room.Total, room.Group > 0 && roomFor(used, held, room.Total, room.Group):
		return nil
	case room.Group <= 0:
		return ErrPendingFull
	case held > 0:
		return ErrGroupShare
	}
	return ErrPendingFull
}

// expire notes when a state or result just stored expires.
func (m *MemoryStore) expire(at time.Time, e expiring) {
	m.expiries.Push(at, e, len(m.states)+len(m.results), func(add func(time.Time, expiring)) {
		for k, p := range m.states {
			add(p.Expires, expiring{k, false})
		}
		for k, r := range m.results {
			add(r.expires, expiring{k, true})
		}
	})
}

// TakeState implements [Store].
func (m *MemoryStore) TakeState(_ context.Context, state string, now time.Time) (Pending, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.states[state]
	if ok {
		delete(m.states, state)
		m.forget(p)
	}
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
	m.expire(expires, expiring{state, true})
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

// NewSQLStore creates the tables and their indexes when they are missing
// and returns the store.
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
	// A database made before the pending logins were shared by client
	// group gets the column; its states count as the group "".
	if _, err := db.ExecContext(ctx, `SELECT client_group FROM nmauth_sso_states WHERE 1 = 0`); err != nil {
		if _, err := db.ExecContext(ctx, `ALTER TABLE nmauth_sso_states ADD COLUMN client_group TEXT NOT NULL DEFAULT ''`); err != nil {
			return nil, err
		}
	}
	for _, stmt := range []string{
		// Expired states and results are found, and live states counted,
		// in all and by group, through these; a database made before
		// them gets them here.
		`CREATE INDEX IF NOT EXISTS nmauth_sso_states_expires ON nmauth_sso_states (expires)`,
		`CREATE INDEX IF NOT EXISTS nmauth_sso_results_expires ON nmauth_sso_results (expires)`,
		`CREATE INDEX IF NOT EXISTS nmauth_sso_states_group ON nmauth_sso_states (client_group, expires)`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// q writes the ? placeholders of query as PostgreSQL's $n.
func (s *SQLStore) q(query string) string { return s.dialect.Rebind(query) }

// pendingLockID is the PostgreSQL advisory lock key that serializes the
// puts of states across processes; it spells "ssopend" in ASCII.
const pendingLockID int64 = 0x73736f70656e64

// countLive counts the live states, up to a limit, through their index;
// countGroup those of one group.
const (
	countLive  = `SELECT COUNT(*) FROM (SELECT 1 FROM nmauth_sso_states WHERE expires > ? LIMIT ?) AS live`
	countGroup = `SELECT COUNT(*) FROM (SELECT 1 FROM nmauth_sso_states WHERE client_group = ? AND expires > ? LIMIT ?) AS held`
)

// roomLeft counts, through q, the live states at now in all and of group
// and says whether group may put another within room.
func (s *SQLStore) roomLeft(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, group string, now int64, room Room) error {
	var used, held int
	if room.Group > 0 {
		if err := q.QueryRowContext(ctx, s.q(countGroup), group, now, room.Group).Scan(&held); err != nil {
			return err
		}
	}
	if err := q.QueryRowContext(ctx, s.q(countLive), now, room.Total).Scan(&used); err != nil {
		return err
	}
	return roomError(used, held, room)
}

// PutState implements [Store] in one transaction, which holds SQLite's
// write lock from its start, or on PostgreSQL an advisory lock, so that
// puts on several replicas count and insert one after the other. While
// the group has no room it refuses at once, by reads that take no lock,
// so that a flood of refused puts does not queue for it.
func (s *SQLStore) PutState(ctx context.Context, state string, p Pending, room Room) error {
	now := time.Now().UnixNano()
	// A group that holds none, with all taken, goes on to push out
	// another's state under the lock.
	if err := s.roomLeft(ctx, s.db, p.Group, now, room); err != nil && !(errors.Is(err, ErrPendingFull) && room.Group > 0) {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.dialect == nmauth.DialectPostgres {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", pendingLockID); err != nil {
			return err
		}
	}
	for _, table := range []string{"nmauth_sso_states", "nmauth_sso_results"} {
		if _, err := tx.ExecContext(ctx, s.q("DELETE FROM "+table+" WHERE expires <= ?"), now); err != nil {
			return err
		}
	}
	err = s.roomLeft(ctx, tx, p.Group, now, room)
	if errors.Is(err, ErrPendingFull) && room.Group > 0 {
		err = s.pushOut(ctx, tx, now)
	}
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO nmauth_sso_states (state, nonce, verifier, binding, headless, client_group, expires)
		VALUES (?, ?, ?, ?, ?, ?, ?)`), state, p.Nonce, p.Verifier, p.Binding, p.Headless, p.Group, p.Expires.UnixNano()); err != nil {
		return err
	}
	return tx.Commit()
}

// largestGroup finds the group that holds the most live states, of those
// the one whose oldest is oldest; pushOut drops that group's oldest.
const (
	largestGroup = `SELECT client_group, COUNT(*) AS n FROM nmauth_sso_states WHERE expires > ?
		GROUP BY client_group ORDER BY n DESC, MIN(expires) LIMIT 1`
	dropOldest = `DELETE FROM nmauth_sso_states WHERE state = (SELECT state FROM nmauth_sso_states
		WHERE client_group = ? AND expires > ? ORDER BY expires LIMIT 1)`
)

// pushOut drops, in tx, the oldest live state of the group that holds
// the most, if it holds two or more, else fails with [ErrPendingFull]. It
// reads the states' group index whole: it runs only once all places are
// taken, for a group that holds none.
func (s *SQLStore) pushOut(ctx context.Context, tx *sql.Tx, now int64) error {
	var group string
	var n int
	err := tx.QueryRowContext(ctx, s.q(largestGroup), now).Scan(&group, &n)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if n < 2 {
		return ErrPendingFull
	}
	_, err = tx.ExecContext(ctx, s.q(dropOldest), group, now)
	return err
}

// TakeState implements [Store] with one DELETE … RETURNING, so that of
// two replicas taking one state only one gets it.
func (s *SQLStore) TakeState(ctx context.Context, state string, now time.Time) (Pending, error) {
	var p Pending
	var expires int64
	err := s.db.QueryRowContext(ctx, s.q(`DELETE FROM nmauth_sso_states WHERE state = ?
		RETURNING nonce, verifier, binding, headless, client_group, expires`), state).Scan(&p.Nonce, &p.Verifier, &p.Binding, &p.Headless, &p.Group, &expires)
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
