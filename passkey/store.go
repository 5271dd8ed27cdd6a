package passkey

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/internal/expiry"
)

// Record is what a [Store] keeps of one user: the WebAuthn user handle and
// the user's passkeys. No field is a secret: a passkey's private key never
// leaves its authenticator, and the Store holds only the public key.
type Record struct {
	// User is the prepared username (see [nmauth.PrepareUsername]), the
	// record's key.
	User string
	// Handle is the WebAuthn user handle that the user's passkeys were
	// made for: random bytes that name nobody, as WebAuthn asks, unique
	// among records. A discoverable passkey returns it at a passwordless
	// login, which is how the login finds its user.
	Handle []byte
	// Account is the creation time of the nmauth account the passkeys were
	// registered to ([nmauth.UserInfo.CreatedAt]). A record whose account
	// was deleted and created again under the same name is stale: none of
	// its passkeys works for the new account.
	Account time.Time
	// Passkeys are the user's passkeys, oldest first.
	Passkeys []Passkey
}

// Passkey is one registered WebAuthn credential.
type Passkey struct {
	// ID is the credential id its authenticator chose, unique within a
	// record.
	ID []byte `json:"id"`
	// Name is the user's name for it, such as "laptop".
	Name string `json:"name"`
	// PublicKey is the credential's public key, COSE-encoded.
	PublicKey []byte `json:"publicKey"`
	// SignCount is the last signature counter the authenticator reported;
	// an assertion must report a greater one, unless both are zero (an
	// authenticator that keeps no counter), else it is refused as from a
	// cloned authenticator.
	SignCount uint32 `json:"signCount"`
	// Transports are the ways the browser may reach the authenticator
	// ("usb", "internal", ...), as it reported them.
	Transports []string `json:"transports,omitempty"`
	// AAGUID names the authenticator's model; all zero for most passkeys,
	// which do not tell.
	AAGUID []byte `json:"aaguid,omitempty"`
	// UserVerified reports that the authenticator verified the user (PIN,
	// biometrics) when the passkey was made.
	UserVerified bool `json:"userVerified,omitempty"`
	// BackupEligible and BackupState are the authenticator's backup flags:
	// whether the passkey may be synced to other devices, and whether it
	// is. An assertion whose BackupEligible differs is refused.
	BackupEligible bool `json:"backupEligible,omitempty"`
	BackupState    bool `json:"backupState,omitempty"`
	// Discoverable reports that the passkey was made as a discoverable
	// credential, so that it can log in without a username.
	Discoverable bool      `json:"discoverable,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
	// LastUsedAt is the time of the last login with it; zero for never.
	LastUsedAt time.Time `json:"lastUsedAt,omitzero"`
}

// Flow names the ceremony a challenge was made for; a challenge is
// accepted only by the ceremony of its flow.
type Flow string

// The three ceremonies.
const (
	FlowRegister     Flow = "register"
	FlowSecondFactor Flow = "second-factor"
	FlowPasswordless Flow = "passwordless"
)

// Challenge is one challenge handed to a browser, until it is taken back
// once by the ceremony that finishes it.
type Challenge struct {
	// Key is the hex SHA-256 of the challenge's bytes, the record's key.
	// The Store never holds a challenge that is still live in the clear.
	Key  string
	Flow Flow
	// User is the prepared username the challenge is bound to; empty for
	// a passwordless login, which learns its user from the passkey.
	User string
	// Handle is, for a registration, the user handle offered to the
	// authenticator; Name the name the new passkey will have.
	Handle []byte
	Name   string
	// Expires is when the challenge stops being accepted.
	Expires time.Time
}

// Store keeps passkeys and challenges: the only state of a [Manager], and
// shared across replicas when the Store is (as [SQLStore] is).
//
// Every method takes a context first and must honour its cancellation. A
// read of a missing record returns [nmauth.ErrNotFound]; a create of an
// existing key returns [nmauth.ErrExists]; other errors are for system
// failures only. A delete of a missing record is a no-op and returns nil.
//
// UpdateRecord is the only read-modify-write of a record: it loads it,
// calls fn on a copy, and stores the result atomically with respect to
// every other update of the same record, across processes where the Store
// is shared. If fn returns an error nothing is written and that error is
// returned unchanged. fn may run more than once and must not call the
// Store. fn cannot move a record: a change of its User is ignored.
//
// TakeChallenge removes a challenge and returns it in one atomic step, so
// that of any number of concurrent takes of one challenge, on any replica,
// exactly one gets it. PutChallenge drops the challenges that expired
// before now, finding them without reading the live ones, so that
// abandoned ceremonies do not pile up; then it stores c unless limit
// challenges of c's flow are stored already, which is [ErrChallengesFull]
// and stores nothing. Its count and its insert are one atomic step across
// replicas, so the challenges of a flow never number more than limit.
//
// Stores return copies: mutating a returned record never changes the Store.
type Store interface {
	GetRecord(ctx context.Context, user string) (Record, error)
	// RecordByHandle returns the record whose Handle is handle.
	RecordByHandle(ctx context.Context, handle []byte) (Record, error)
	// CreateRecord stores a new record; ErrExists when its User or its
	// Handle is taken.
	CreateRecord(ctx context.Context, r Record) error
	UpdateRecord(ctx context.Context, user string, fn func(*Record) error) error
	DeleteRecord(ctx context.Context, user string) error

	PutChallenge(ctx context.Context, c Challenge, now time.Time, limit int) error
	TakeChallenge(ctx context.Context, key string) (Challenge, error)
}

// MemoryStore is a [Store] held in memory and safe for concurrent use, for
// tests and single-process use. The zero value is ready to use.
type MemoryStore struct {
	mu         sync.Mutex
	records    map[string]Record
	challenges map[string]Challenge
	// expiries holds the challenges by expiry, soonest first, so that a
	// put drops the expired ones without a scan. An entry whose challenge
	// was taken stays until it comes up, or until they outnumber the
	// challenges twice over and the heap is built again.
	expiries expiry.Heap[string]
	// flows counts the stored challenges of each flow.
	flows map[Flow]int
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty [MemoryStore].
func NewMemoryStore() *MemoryStore { return &MemoryStore{} }

// GetRecord implements [Store].
func (s *MemoryStore) GetRecord(ctx context.Context, user string) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[user]
	if !ok {
		return Record{}, nmauth.ErrNotFound
	}
	return cloneRecord(r), nil
}

// RecordByHandle implements [Store] with a scan: the memory store serves
// tests and small deployments.
func (s *MemoryStore) RecordByHandle(ctx context.Context, handle []byte) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.records {
		if bytes.Equal(r.Handle, handle) {
			return cloneRecord(r), nil
		}
	}
	return Record{}, nmauth.ErrNotFound
}

// CreateRecord implements [Store].
func (s *MemoryStore) CreateRecord(ctx context.Context, r Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, other := range s.records {
		if other.User == r.User || bytes.Equal(other.Handle, r.Handle) {
			return nmauth.ErrExists
		}
	}
	if s.records == nil {
		s.records = map[string]Record{}
	}
	s.records[r.User] = cloneRecord(r)
	return nil
}

// UpdateRecord implements [Store].
func (s *MemoryStore) UpdateRecord(ctx context.Context, user string, fn func(*Record) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[user]
	if !ok {
		return nmauth.ErrNotFound
	}
	r = cloneRecord(r)
	if err := fn(&r); err != nil {
		return err
	}
	r.User = user
	s.records[user] = r
	return nil
}

// DeleteRecord implements [Store].
func (s *MemoryStore) DeleteRecord(ctx context.Context, user string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, user)
	return nil
}

// PutChallenge implements [Store].
func (s *MemoryStore) PutChallenge(ctx context.Context, c Challenge, now time.Time, limit int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.challenges == nil {
		s.challenges, s.flows = map[string]Challenge{}, map[Flow]int{}
	}
	s.expiries.PopDue(now, func(key string, at time.Time) {
		if old, ok := s.challenges[key]; ok && old.Expires.Equal(at) {
			s.remove(key)
		}
	})
	if _, ok := s.challenges[c.Key]; ok {
		return nmauth.ErrExists
	}
	if s.flows[c.Flow] >= limit {
		return ErrChallengesFull
	}
	c.Handle = slices.Clone(c.Handle)
	s.challenges[c.Key] = c
	s.flows[c.Flow]++
	s.expiries.Push(c.Expires, c.Key, len(s.challenges), func(add func(time.Time, string)) {
		for k, c := range s.challenges {
			add(c.Expires, k)
		}
	})
	return nil
}

// remove deletes the stored challenge of key.
func (s *MemoryStore) remove(key string) {
	s.flows[s.challenges[key].Flow]--
	delete(s.challenges, key)
}

// TakeChallenge implements [Store].
func (s *MemoryStore) TakeChallenge(ctx context.Context, key string) (Challenge, error) {
	if err := ctx.Err(); err != nil {
		return Challenge{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.challenges[key]
	if !ok {
		return Challenge{}, nmauth.ErrNotFound
	}
	s.remove(key)
	return c, nil
}

// cloneRecord copies the slices of r so that callers and the store never
// share backing arrays.
func cloneRecord(r Record) Record {
	r.Handle = slices.Clone(r.Handle)
	r.Passkeys = slices.Clone(r.Passkeys)
	for i := range r.Passkeys {
		p := &r.Passkeys[i]
		p.ID = slices.Clone(p.ID)
		p.PublicKey = slices.Clone(p.PublicKey)
		p.Transports = slices.Clone(p.Transports)
		p.AAGUID = slices.Clone(p.AAGUID)
	}
	return r
}
