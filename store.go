package nmauth

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/nmauth/nmauth/internal/memtable"
	"github.com/nmauth/nmauth/internal/state"
)

// BrokenRecordError is the error of a [Store] read or update of a record
// it holds but cannot decode, such as a column whose JSON was damaged
// outside nmauth, or that holds a value of the wrong type. It names the record and the column, never their data.
// A custom Store returns one, as [SQLStore] does, so that one broken
// record is the problem of its own account alone.
type BrokenRecordError struct {
	// Kind is the kind of record: "user", "host" or "access token".
	Kind string
	// Key is the record's key: the user's name, the host's or the access
	// token's id.
	Key string
	// Column names the part of the record that cannot be decoded, in the
	// Store's own terms (a SQLStore's column name).
	Column string
	// Err is the decoding error.
	Err error
}

// Error names the record and the column.
func (e *BrokenRecordError) Error() string {
	return fmt.Sprintf("nmauth: broken record: %s %q: column %s cannot be decoded: %v", e.Kind, e.Key, e.Column, e.Err)
}

// Unwrap returns [ErrBrokenRecord] and the decoding error.
func (e *BrokenRecordError) Unwrap() []error { return []error{ErrBrokenRecord, e.Err} }

// RepairStore is implemented by a [Store] that can find the records it
// cannot decode and repair them; [SQLStore] does, and nmauthd check uses
// it through [Admin.BrokenRecords] and
// [Admin.RepairRecords].
type RepairStore interface {
	// BrokenRecords reads up to limit records, from the start when after
	// is empty or else from where the batch that returned after ended,
	// and returns one error for each column of each of them that the
	// Store holds but cannot decode, users first, then hosts, then access
	// tokens; and where the next batch starts, empty once every record
	// has been read. A scan so is a run of short reads, each of which
	// [Admin.BrokenRecords] gives a store deadline of its own.
	BrokenRecords(ctx context.Context, after string, limit int) (broken []*BrokenRecordError, next string, err error)
	// RepairRecord resets the column b names to a safe value: one that
	// grants nothing the damaged value might have withheld. A column
	// that decodes again by now, and a record gone, are left alone and
	// return nil.
	RepairRecord(ctx context.Context, b *BrokenRecordError) error
}

// User is the stored record of a user account.
//
// Name is the PRECIS-prepared username (see [PrepareUsername]) and is the
// record's key. No field holds a secret in the clear: PasswordHash is a PHC
// string, TOTPSecret is sealed with AES-256-GCM under a key the Store never
// sees, and RecoveryCodes holds only hashes.
type User struct {
	Name         string
	PasswordHash string
	Disabled     bool
	// TOTPSecret is the sealed TOTP secret; nil while TOTP is off.
	TOTPSecret []byte
	// RecoveryCodes holds the hashes of the unused recovery codes.
	RecoveryCodes []string
	CreatedAt     time.Time

	// Broken names the parts of the record the Store could not decode,
	// which hold their zero value. It is set only in a listing, which
	// returns a broken record rather than fail the page (see [Store]);
	// a read or an update of it returns a [*BrokenRecordError].
	Broken []string

	// State is what nmauth keeps of the user from one call to the next:
	// its login counters, its TOTP replay and attempt state, and its
	// revocation generation. A Store keeps it whole, as it keeps the other
	// fields.
	State State
}

// State is what nmauth keeps of an account from one call to the next, in
// a [User] or [Host] record. It is opaque: nothing in it is for an
// application to read or change. A Store keeps it as it keeps the other
// fields: a Store in memory by keeping the value and copying it with the
// record, any other by its text form, which MarshalText gives and
// UnmarshalText takes back (a JSON object: text, json, gob and yaml
// encoders use them unasked). The zero State is an account's first.
type State struct {
	v state.User
}

// MarshalText returns the state's text form, for a Store to keep.
func (s State) MarshalText() ([]byte, error) { return json.Marshal(s.v) }

// UnmarshalText sets the state from the text form MarshalText returned.
func (s *State) UnmarshalText(b []byte) error {
	var v state.User
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("nmauth: state: %w", err)
	}
	s.v = v
	return nil
}

// TOTPEnabled reports whether the user has finished TOTP enrollment.
func (u *User) TOTPEnabled() bool { return len(u.TOTPSecret) > 0 }

// Host is the stored record of a host (a machine that joins networks).
type Host struct {
	ID string
	// MACAddress, when set, is the only MAC address the host may log in
	// with. It is stored in canonical lower-case colon form.
	MACAddress string
	// PasswordHash is a PHC string, or the keyed digest of a machine
	// secret (see [Admin.CreateHost]).
	PasswordHash string
	Disabled     bool
	CreatedAt    time.Time

	// Broken names the parts of the record the Store could not decode;
	// see [User.Broken].
	Broken []string

	// State is what nmauth keeps of the host from one call to the next;
	// see [User.State].
	State State
}

// Store keeps users, hosts and the counters that must hold across replicas.
// It is the only shared state of an [Authenticator].
//
// Every method takes a context first and must honour its cancellation. A
// read of a missing record returns [ErrNotFound]; a create of an existing
// key returns [ErrExists]; other errors are for system failures only. A
// delete of a missing record is a no-op and returns nil.
//
// UpdateUser and UpdateHost are the only read-modify-write primitives. They
// load the record, call fn on a copy, and store the result atomically with
// respect to every other update of the same record, across processes where
// the Store is shared (a SQL store runs them in one transaction holding a
// row lock). If fn returns an error nothing is written and that error is
// returned unchanged. fn may run more than once if the Store retries a
// conflicting transaction, so it must not have side effects, and it must
// not call the Store (it runs holding the record's lock). fn cannot move a
// record: a change to its key is ignored.
//
// ListUsers and ListHosts read the records a page at a time, so that a
// caller can walk a million of them in flat memory: each returns the
// records whose key is greater than after in byte order (an empty after
// starts at the first), at most limit of them, sorted by key in byte
// order, whatever the collation of a database. A page shorter than limit
// is the last; the key of a page's last record is the after of the next.
// A limit of zero or less returns no records. Records created or deleted
// while a caller pages are seen or not, depending on where their keys
// fall.
//
// A record the Store holds but cannot decode is its own account's problem
// alone: GetUser, GetHost, UpdateUser and UpdateHost of it return a
// [*BrokenRecordError] (and UpdateUser does not call fn), while ListUsers
// and ListHosts return it in its place, with the parts they could not
// decode at their zero value and named in its Broken field.
//
// Stores return copies: mutating a returned record never changes the Store.
type Store interface {
	GetUser(ctx context.Context, name string) (User, error)
	ListUsers(ctx context.Context, after string, limit int) ([]User, error)
	CreateUser(ctx context.Context, u User) error
	UpdateUser(ctx context.Context, name string, fn func(*User) error) error
	DeleteUser(ctx context.Context, name string) error

	GetHost(ctx context.Context, id string) (Host, error)
	ListHosts(ctx context.Context, after string, limit int) ([]Host, error)
	CreateHost(ctx context.Context, h Host) error
	UpdateHost(ctx context.Context, id string, fn func(*Host) error) error
	DeleteHost(ctx context.Context, id string) error
}

// MemoryStore is a [Store] held in memory and safe for concurrent use. It
// suits tests, examples and single-process deployments that can afford to
// lose their data at restart. The zero value is ready to use.
type MemoryStore struct {
	// mu guards every table, so that an operation that spans kinds, such
	// as JoinHost, is one step.
	mu     sync.Mutex
	users  memtable.Table[User, userRow]
	hosts  memtable.Table[Host, hostRow]
	checks map[string]string
	access memtable.Table[AccessToken, accessRow]
	enroll memtable.Table[EnrollmentKey, enrollRow]
}

var (
	_ Store          = (*MemoryStore)(nil)
	_ KeyCheckStore  = (*MemoryStore)(nil)
	_ HostBatchStore = (*MemoryStore)(nil)
)

// NewMemoryStore returns an empty [MemoryStore].
func NewMemoryStore() *MemoryStore { return &MemoryStore{} }

// GetUser implements [Store].
func (s *MemoryStore) GetUser(ctx context.Context, name string) (User, error) {
	return memtable.Lock(ctx, &s.mu, func() (User, error) { return s.users.Find(name, ErrNotFound) })
}

// ListUsers implements [Store].
func (s *MemoryStore) ListUsers(ctx context.Context, after string, limit int) ([]User, error) {
	return memtable.Lock(ctx, &s.mu, func() ([]User, error) { return s.users.Page(after, limit), nil })
}

// CreateUser implements [Store].
func (s *MemoryStore) CreateUser(ctx context.Context, u User) error {
	return memtable.Do(ctx, &s.mu, func() error { return s.users.Insert(u, ErrExists) })
}

// UpdateUser implements [Store].
func (s *MemoryStore) UpdateUser(ctx context.Context, name string, fn func(*User) error) error {
	return memtable.Do(ctx, &s.mu, func() error { return s.users.Change(name, fn, ErrNotFound) })
}

// DeleteUser implements [Store].
func (s *MemoryStore) DeleteUser(ctx context.Context, name string) error {
	return memtable.Do(ctx, &s.mu, func() error { return s.users.Remove(name) })
}

// GetHost implements [Store].
func (s *MemoryStore) GetHost(ctx context.Context, id string) (Host, error) {
	return memtable.Lock(ctx, &s.mu, func() (Host, error) { return s.hosts.Find(id, ErrNotFound) })
}

// ListHosts implements [Store].
func (s *MemoryStore) ListHosts(ctx context.Context, after string, limit int) ([]Host, error) {
	return memtable.Lock(ctx, &s.mu, func() ([]Host, error) { return s.hosts.Page(after, limit), nil })
}

// CreateHost implements [Store].
func (s *MemoryStore) CreateHost(ctx context.Context, h Host) error {
	return memtable.Do(ctx, &s.mu, func() error { return s.hosts.Insert(h, ErrExists) })
}

// UpdateHost implements [Store].
func (s *MemoryStore) UpdateHost(ctx context.Context, id string, fn func(*Host) error) error {
	return memtable.Do(ctx, &s.mu, func() error { return s.hosts.Change(id, fn, ErrNotFound) })
}

// UpdateHosts implements [HostBatchStore]: the updates are applied in
// order under the store's lock.
func (s *MemoryStore) UpdateHosts(ctx context.Context, updates []HostUpdate) error {
	return memtable.Do(ctx, &s.mu, func() error {
		for i := range updates {
			u := &updates[i]
			u.Err = s.hosts.Change(u.ID, u.Fn, ErrNotFound)
		}
		return nil
	})
}

// DeleteHost implements [Store].
func (s *MemoryStore) DeleteHost(ctx context.Context, id string) error {
	return memtable.Do(ctx, &s.mu, func() error { return s.hosts.Remove(id) })
}

// userRow is the [memtable.Kind] of a MemoryStore's users.
type userRow struct{}

// Clone copies the slices of u so that callers and the store never
// share backing arrays.
func (userRow) Clone(u User) User {
	u.TOTPSecret = slices.Clone(u.TOTPSecret)
	u.RecoveryCodes = slices.Clone(u.RecoveryCodes)
	u.State.v.PasswordClients = slices.Clone(u.State.v.PasswordClients)
	u.State.v.LoggedOut = slices.Clone(u.State.v.LoggedOut)
	u.Broken = slices.Clone(u.Broken)
	return u
}

func (userRow) Key(u *User) *string { return &u.Name }

// hostRow is the [memtable.Kind] of a MemoryStore's hosts.
type hostRow struct{}

func (hostRow) Clone(h Host) Host {
	h.State.v.PasswordClients = slices.Clone(h.State.v.PasswordClients)
	h.Broken = slices.Clone(h.Broken)
	return h
}

func (hostRow) Key(h *Host) *string { return &h.ID }

// KeyChecks implements [KeyCheckStore].
func (s *MemoryStore) KeyChecks(ctx context.Context) (map[string]string, error) {
	return memtable.Lock(ctx, &s.mu, func() (map[string]string, error) { return maps.Clone(s.checks), nil })
}

// AddKeyCheck implements [KeyCheckStore].
func (s *MemoryStore) AddKeyCheck(ctx context.Context, keyID, check string) error {
	return memtable.Do(ctx, &s.mu, func() error {
		if _, ok := s.checks[keyID]; !ok {
			if s.checks == nil {
				s.checks = make(map[string]string)
			}
			s.checks[keyID] = check
		}
		return nil
	})
}

// HasAccounts implements [KeyCheckStore].
func (s *MemoryStore) HasAccounts(ctx context.Context) (bool, error) {
	return memtable.Lock(ctx, &s.mu, func() (bool, error) { return s.users.Len()+s.hosts.Len() > 0, nil })
}
