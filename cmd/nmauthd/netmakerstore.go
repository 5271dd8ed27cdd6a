package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/nmauth/nmauth"
)

// netmakerStore is the Store of nmauthd in front of an unchanged Netmaker:
// Netmaker's accounts, read live, over nmauthd's own --db. An account
// moves on first use: the first read of a Netmaker user or host makes its
// record in --db from Netmaker's (hash, TOTP secret, disabled, MAC), and
// each later read brings over what changed in Netmaker since: a new hash
// replaces the one upgraded at a login, a TOTP secret set or cleared in
// Netmaker replaces the one here, Netmaker's disabled flag holds. What
// nmauth adds (a TOTP turned on here, replay and attempt counts, tokens'
// generations) stays in --db. An account Netmaker no longer holds is
// unknown: its record in --db is left, and is replaced if Netmaker makes
// one of that name again, since its hash then differs.
type netmakerStore struct {
	*database
	nm *netmakerReader
	// seal builds the records of Netmaker's accounts as an import does,
	// under the same root secrets, in memory, from where they are copied
	// to --db: it seals TOTP secrets as the Authenticator opens them.
	seal    *nmauth.Authenticator
	sealed  *nmauth.MemoryStore
	sealing sync.Mutex
	// auth is the Authenticator over this store, set once it exists; it
	// revokes the tokens of an account whose password Netmaker changed.
	auth atomic.Pointer[nmauth.Authenticator]

	// marks caches nmauthd_netmaker_marks: what was last brought over of
	// each account.
	mu    sync.Mutex
	marks map[string]netmakerMark
}

// netmakerMark is what was last brought over of a Netmaker account: a
// digest of its hash and of its TOTP secret, so that the secrets
// themselves are not kept twice.
type netmakerMark struct {
	Password string `json:"password"`
	TOTP     string `json:"totp,omitempty"`
	Disabled bool   `json:"disabled,omitempty"`
	MAC      string `json:"mac,omitempty"`
}

// createNetmakerMarks keeps the marks in --db.
const createNetmakerMarks = `CREATE TABLE IF NOT EXISTS nmauthd_netmaker_marks (
	kind TEXT NOT NULL,
	account TEXT NOT NULL,
	mark TEXT NOT NULL,
	PRIMARY KEY (kind, account)
)`

func newNetmakerStore(ctx context.Context, db *database, nm *netmakerReader, secrets [][]byte) (*netmakerStore, error) {
	if _, err := db.db.ExecContext(ctx, createNetmakerMarks); err != nil {
		return nil, fmt.Errorf("opening database %s: %w", db.name, err)
	}
	mem := nmauth.NewMemoryStore()
	seal, err := nmauth.New(nmauth.Config{Store: mem, Secrets: secrets, StatusCacheSize: -1, TokenCacheSize: -1, HostWriteQueue: -1})
	if err != nil {
		return nil, err
	}
	return &netmakerStore{database: db, nm: nm, seal: seal, sealed: mem, marks: map[string]netmakerMark{}}, nil
}

func digestOf(s string) string {
	if s == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// mark reads what was last brought over of an account.
func (s *netmakerStore) mark(ctx context.Context, kind, key string) (netmakerMark, bool, error) {
	s.mu.Lock()
	m, ok := s.marks[kind+"\x00"+key]
	s.mu.Unlock()
	if ok {
		return m, true, nil
	}
	var v string
	err := s.db.QueryRowContext(ctx, s.query(`SELECT mark FROM nmauthd_netmaker_marks WHERE kind = ? AND account = ?`), kind, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return m, false, nil
	}
	if err != nil {
		return m, false, err
	}
	if err := json.Unmarshal([]byte(v), &m); err != nil {
		return m, false, nil // brought over again
	}
	s.remember(kind, key, m)
	return m, true, nil
}

func (s *netmakerStore) remember(kind, key string, m netmakerMark) {
	s.mu.Lock()
	if len(s.marks) >= maxNetmakerCached {
		clear(s.marks)
	}
	s.marks[kind+"\x00"+key] = m
	s.mu.Unlock()
}

func (s *netmakerStore) setMark(ctx context.Context, kind, key string, m netmakerMark) error {
	b, _ := json.Marshal(m)
	_, err := s.db.ExecContext(ctx, s.query(`INSERT INTO nmauthd_netmaker_marks (kind, account, mark) VALUES (?, ?, ?)
		ON CONFLICT (kind, account) DO UPDATE SET mark = excluded.mark`), kind, key, string(b))
	if err == nil {
		s.remember(kind, key, m)
	}
	return err
}

// syncUser brings the Netmaker user that name prepares from over to --db;
// it returns nmauth.ErrNotFound when Netmaker has no such user.
func (s *netmakerStore) syncUser(ctx context.Context, name string) error {
	u, found, err := s.nm.user(ctx, name)
	if err != nil {
		return err
	}
	if !found {
		return s.forget(ctx, "user", name)
	}
	want := netmakerMark{Password: digestOf(u.Password), Disabled: u.AccountDisabled}
	if u.external() {
		want.Password = "sso"
	}
	if u.IsMFAEnabled {
		want.TOTP = digestOf(u.TOTPSecret)
	}
	had, marked, err := s.mark(ctx, "user", name)
	if err != nil {
		return err
	}
	if marked && had == want {
		return nil
	}
	fresh, err := s.sealedUser(ctx, name, u)
	if err != nil {
		return err
	}
	err = s.database.UpdateUser(ctx, name, func(own *nmauth.User) error {
		if !marked || had.Password != want.Password {
			own.PasswordHash = fresh.PasswordHash
		}
		if !marked || had.TOTP != want.TOTP {
			// Set or cleared in Netmaker; a TOTP turned on here while
			// Netmaker's stays as it was is kept.
			own.TOTPSecret, own.RecoveryCodes = fresh.TOTPSecret, nil
		}
		own.Disabled = want.Disabled
		return nil
	})
	if errors.Is(err, nmauth.ErrNotFound) {
		err = s.database.CreateUser(ctx, fresh)
		if errors.Is(err, nmauth.ErrExists) {
			err = nil // another login brought it over meanwhile
		}
	}
	if err != nil {
		return err
	}
	if err := s.setMark(ctx, "user", name, want); err != nil {
		return err
	}
	if a := s.auth.Load(); marked && had.Password != want.Password && a != nil {
		// A new password in Netmaker ends the sessions of the old one here.
		return a.Admin().RevokeUserTokens(ctx, name)
	}
	return nil
}

// forget drops what --db holds of an account that Netmaker no longer
// holds, once it was brought over: its record, its mark and, for a user,
// its passkeys, so that an account Netmaker makes again under that name
// starts afresh rather than with the second factors of the one before. It
// returns nmauth.ErrNotFound, the account's answer.
func (s *netmakerStore) forget(ctx context.Context, kind, key string) error {
	_, marked, err := s.mark(ctx, kind, key)
	if err != nil {
		return err
	}
	if !marked {
		return nmauth.ErrNotFound
	}
	if kind == "user" {
		err = errors.Join(s.database.DeleteUser(ctx, key), s.passkeys.DeleteRecord(ctx, key))
	} else {
		err = s.database.DeleteHost(ctx, key)
	}
	if err == nil {
		_, err = s.db.ExecContext(ctx, s.query(`DELETE FROM nmauthd_netmaker_marks WHERE kind = ? AND account = ?`), kind, key)
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.marks, kind+"\x00"+key)
	s.mu.Unlock()
	return nmauth.ErrNotFound
}

// sealedUser is the record an import of u makes, under the root secrets.
func (s *netmakerStore) sealedUser(ctx context.Context, name string, u netmakerLiveUser) (nmauth.User, error) {
	in := nmauth.ImportedUser{Name: name, Disabled: u.AccountDisabled}
	if !u.external() {
		in.PasswordHash = u.Password
	}
	if u.IsMFAEnabled {
		in.TOTPSecret = u.TOTPSecret
	}
	s.sealing.Lock()
	defer s.sealing.Unlock()
	mem := s.seal.Admin()
	defer mem.DeleteUser(context.WithoutCancel(ctx), name)
	if _, err := mem.ImportUser(ctx, in); err != nil {
		return nmauth.User{}, &nmauth.BrokenRecordError{Kind: "user", Key: name, Column: "Netmaker's users.value", Err: err}
	}
	return s.sealed.GetUser(ctx, name)
}

// syncHost brings the Netmaker host id over to --db.
func (s *netmakerStore) syncHost(ctx context.Context, id string) error {
	h, found, err := s.nm.host(ctx, id)
	if err != nil {
		return err
	}
	if !found {
		return s.forget(ctx, "host", id)
	}
	want := netmakerMark{Password: digestOf(h.HostPass), MAC: netmakerMAC(h)}
	had, marked, err := s.mark(ctx, "host", id)
	if err != nil || marked && had == want {
		return err
	}
	fresh, err := s.sealedHost(ctx, nmauth.ImportedHost{ID: id, MACAddress: want.MAC, PasswordHash: h.HostPass})
	if err != nil {
		return err
	}
	err = s.database.UpdateHost(ctx, id, func(own *nmauth.Host) error {
		if !marked || had.Password != want.Password {
			own.PasswordHash = fresh.PasswordHash
		}
		own.MACAddress = fresh.MACAddress
		return nil
	})
	if errors.Is(err, nmauth.ErrNotFound) {
		if err = s.database.CreateHost(ctx, fresh); errors.Is(err, nmauth.ErrExists) {
			err = nil
		}
	}
	if err != nil {
		return err
	}
	return s.setMark(ctx, "host", id, want)
}

// sealedHost is the record an import of in makes.
func (s *netmakerStore) sealedHost(ctx context.Context, in nmauth.ImportedHost) (nmauth.Host, error) {
	s.sealing.Lock()
	defer s.sealing.Unlock()
	mem := s.seal.Admin()
	defer mem.DeleteHost(context.WithoutCancel(ctx), in.ID)
	if _, err := mem.ImportHost(ctx, in, nil); err != nil {
		return nmauth.Host{}, &nmauth.BrokenRecordError{Kind: "host", Key: in.ID, Column: "Netmaker's hosts.value", Err: err}
	}
	return s.sealed.GetHost(ctx, in.ID)
}

// The reads and updates of accounts bring them over from Netmaker first.

func (s *netmakerStore) GetUser(ctx context.Context, name string) (nmauth.User, error) {
	if err := s.syncUser(ctx, name); err != nil {
		return nmauth.User{}, err
	}
	return s.database.GetUser(ctx, name)
}

func (s *netmakerStore) UpdateUser(ctx context.Context, name string, fn func(*nmauth.User) error) error {
	if err := s.syncUser(ctx, name); err != nil {
		return err
	}
	return s.database.UpdateUser(ctx, name, fn)
}

func (s *netmakerStore) GetHost(ctx context.Context, id string) (nmauth.Host, error) {
	if err := s.syncHost(ctx, id); err != nil {
		return nmauth.Host{}, err
	}
	return s.database.GetHost(ctx, id)
}

func (s *netmakerStore) GetHostLogin(ctx context.Context, id string) (nmauth.Host, error) {
	if err := s.syncHost(ctx, id); err != nil {
		return nmauth.Host{}, err
	}
	return s.database.GetHostLogin(ctx, id)
}

func (s *netmakerStore) UpdateHost(ctx context.Context, id string, fn func(*nmauth.Host) error) error {
	if err := s.syncHost(ctx, id); err != nil {
		return err
	}
	return s.database.UpdateHost(ctx, id, fn)
}

// CreateUser and CreateHost refuse: in this mode accounts are made in
// Netmaker.
func (s *netmakerStore) CreateUser(context.Context, nmauth.User) error { return errNetmakerAccounts }
func (s *netmakerStore) CreateHost(context.Context, nmauth.Host) error { return errNetmakerAccounts }

// errNetmakerAccounts refuses to make an account at nmauthd in front of
// Netmaker.
var errNetmakerAccounts = errors.New("accounts are made in Netmaker when nmauthd serves in front of it (--netmaker-db)")

var _ nmauth.Store = (*netmakerStore)(nil)
var _ nmauth.HostLoginStore = (*netmakerStore)(nil)
