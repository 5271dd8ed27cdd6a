// Package hasher runs the expensive checks of a login and the hashing of
// new passwords: nmauth's own argon2id under the parameters of hashfmt,
// the check of every format of hashfmt's registry, and the dummy check of
// an account that does not exist, each under the fair admission gate that
// bounds how many run at once; and the keyed digest of a machine secret.
// It knows nothing of accounts beyond the gate's key A.
package hasher

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"runtime"
	"sync"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"

	"github.com/nmauth/nmauth/internal/clientaddr"
	"github.com/nmauth/nmauth/internal/gate"
	"github.com/nmauth/nmauth/internal/hashfmt"
)

// DefaultQueue is how many callers wait for a slot when the caller of
// [Limits] names no number.
const DefaultQueue = 64

// Limits returns the slots and the queue of a hashing gate: concurrency
// slots (0 or less means runtime.NumCPU()) and queue callers waiting (0
// means DefaultQueue, less than 0 means none).
func Limits(concurrency, queue int) (limit, bound int) {
	if concurrency <= 0 {
		concurrency = runtime.NumCPU()
	}
	switch {
	case queue == 0:
		queue = DefaultQueue
	case queue < 0:
		queue = 0
	}
	return concurrency, queue
}

// Hasher hashes and verifies passwords under a concurrency bound: each
// argon2id call holds 19 MiB, so running every login at once would let a
// flood of requests exhaust memory. A hash holds a slot for each thread
// it runs ([hashfmt.Hash.Threads]), so that the bound is one on the cores
// hashing takes too.
type Hasher[A comparable] struct {
	// Gate admits the callers that run, and queues a bounded number more.
	Gate *gate.Gate[A]
	// Rand supplies salts; it must be safe for concurrent use.
	Rand io.Reader
	// ArgonKey and BcryptCompare do the expensive work; tests replace
	// them to hold a slot or to keep fuzzing cheap.
	ArgonKey      func(password, salt []byte, time, memory uint32, threads uint8, keyLen uint32) []byte
	BcryptCompare func(hash, password []byte) error

	dummyOnce sync.Once
	dummy     string
}

// New returns a hasher whose callers g admits, drawing salts from rnd
// (nil means crypto/rand).
func New[A comparable](g *gate.Gate[A], rnd io.Reader) *Hasher[A] {
	if rnd == nil {
		rnd = rand.Reader
	}
	return &Hasher[A]{Gate: g, Rand: rnd, ArgonKey: argon2.IDKey, BcryptCompare: bcrypt.CompareHashAndPassword}
}

// Release frees the weight slots a caller holds; none when weight is 0.
func (h *Hasher[A]) Release(weight int) {
	if weight > 0 {
		h.Gate.Release(weight)
	}
}

// Grow makes a caller that holds *held slots hold threads of them, when
// that is more: it learnt from the hash it read that its check runs as
// many threads (see [gate.Gate.Grow]). On failure it holds none, and
// *held is 0.
func (h *Hasher[A]) Grow(ctx context.Context, held *int, threads int) error {
	if threads <= *held {
		return nil
	}
	if err := h.Gate.Grow(ctx, *held, threads); err != nil {
		*held = 0
		return err
	}
	*held = threads
	return nil
}

// Hash returns the argon2id PHC string of password, already prepared,
// with the current parameters and a fresh salt. A new hash is an
// administrator's or an account's own, never a stranger's: it waits
// with the known.
func (h *Hasher[A]) Hash(ctx context.Context, password string) (string, error) {
	if err := h.acquire(ctx, gate.ClassKnown, hashfmt.Threads); err != nil {
		return "", err
	}
	defer h.Release(hashfmt.Threads)
	return h.HashHeld(password)
}

// HashHeld is Hash for a caller that already holds a slot.
func (h *Hasher[A]) HashHeld(password string) (string, error) {
	salt := make([]byte, hashfmt.SaltLen)
	if _, err := io.ReadFull(h.Rand, salt); err != nil {
		return "", fmt.Errorf("nmauth: reading password salt: %w", err)
	}
	p := hashfmt.Current()
	key := h.ArgonKey([]byte(password), salt, p.Time, p.Memory, p.Threads, hashfmt.KeyLen)
	return hashfmt.Argon2idHash{Params: p, Salt: salt, Key: key}.Encode(), nil
}

// acquire waits for weight slots for the client of ctx, in class.
func (h *Hasher[A]) acquire(ctx context.Context, class, weight int) error {
	return h.Gate.Acquire(ctx, gate.Entrant[A]{Client: clientaddr.Counted(ctx), Class: class, Weight: weight})
}

// Verify reports whether password matches the stored hash encoded, and
// whether that hash should be replaced by a fresh one (see
// [hashfmt.Hash.Check]). It waits for as many slots as the hash's check
// runs threads. A malformed or unknown hash gives an error wrapping
// [hashfmt.ErrMalformed], before any wait; a full queue or an ended ctx
// gives their errors.
func (h *Hasher[A]) Verify(ctx context.Context, encoded, password string) (ok, upgrade bool, err error) {
	hash, err := h.Parse(hashfmt.Identify(encoded), encoded)
	if err != nil {
		return false, false, err
	}
	threads := hash.Threads()
	if err := h.acquire(ctx, gate.ClassNew, threads); err != nil {
		return false, false, err
	}
	defer h.Release(threads)
	return hash.Check(password)
}

// Parse is [hashfmt.Engines.Parse] with the hasher's engines.
func (h *Hasher[A]) Parse(f hashfmt.Format, encoded string) (hashfmt.Hash, error) {
	return hashfmt.Engines{ArgonIDKey: h.ArgonKey, BcryptCompare: h.BcryptCompare}.Parse(f, encoded)
}

// VerifyDummy does the work of verifying password against a hash that
// matches nothing, so that a login for an unknown user takes as long as
// one for a known user. Its only error is that of the gate, so that an
// overload still answers as one. It names no account that exists, so it
// waits with the names no account has.
func (h *Hasher[A]) VerifyDummy(ctx context.Context, password string) error {
	if err := h.acquire(ctx, gate.ClassNobody, hashfmt.Threads); err != nil {
		return err
	}
	defer h.Release(hashfmt.Threads)
	h.CheckDummy(password)
	return nil
}

// CheckDummy checks password against the dummy, for a caller that holds
// the slots of the house's lanes.
func (h *Hasher[A]) CheckDummy(password string) {
	d, _ := h.Parse(hashfmt.Argon2id, h.Dummy())
	_, _, _ = d.Check(password)
}

// Dummy is the hash that an account that does not exist is checked
// against: a house argon2id hash of random bytes rather than of a
// password, so that no password can be known to match it, and building
// it costs no argon2id run. Should Rand fail, zero bytes serve as well,
// since the dummy protects nothing.
func (h *Hasher[A]) Dummy() string {
	h.dummyOnce.Do(func() { h.dummy, _ = Unusable(h.Rand) })
	return h.dummy
}

// Unusable returns a house argon2id string of random bytes from rnd,
// which no password is known to match, and rnd's error if it fails (the
// string then holds the bytes read).
func Unusable(rnd io.Reader) (string, error) {
	buf := make([]byte, hashfmt.SaltLen+hashfmt.KeyLen)
	_, err := io.ReadFull(rnd, buf)
	a := hashfmt.Argon2idHash{Params: hashfmt.Current(), Salt: buf[:hashfmt.SaltLen], Key: buf[hashfmt.SaltLen:]}
	return a.Encode(), err
}
