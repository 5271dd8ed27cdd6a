package nmauth

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	"github.com/nmauth/nmauth/internal/hashfmt"
	"github.com/nmauth/nmauth/internal/secret"
	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

// The argon2id parameters of new hashes, named here for the root's own
// use (salts of fresh hashes, the dummy); hashfmt owns them.
const (
	argonSaltLen = hashfmt.SaltLen
	argonKeyLen  = hashfmt.KeyLen
)

// Password length bounds, in bytes after PRECIS preparation.
const (
	minPasswordLen = 8
	maxPasswordLen = secret.MaxLen
)

const (
	defaultHashQueue   = 64
	overloadRetryAfter = time.Second
)

// errMalformedHash is returned by verification for a stored hash that is
// not of a format of the registry (internal/hashfmt), or beyond its bounds.
var errMalformedHash = hashfmt.ErrMalformed

// argonParams and argonHash are hashfmt's, under the names the root's
// code and tests have long used.
type (
	argonParams = hashfmt.Params
	argonHash   = hashfmt.Argon2idHash
)

// currentArgonParams returns the parameters of new hashes.
func currentArgonParams() argonParams { return hashfmt.Current() }

// encodeArgonHash writes the PHC string form of a.
func encodeArgonHash(a argonHash) string { return a.Encode() }

// passwordHasher hashes and verifies passwords under a concurrency bound:
// each argon2id call holds 19 MiB, so running every login at once would
// let a flood of requests exhaust memory. A hash holds a slot for each
// thread it runs (hashfmt.Hash.Threads), so that the bound is one on the
// cores hashing takes too. Its slots are shared fairly among clients (see
// admission).
type passwordHasher struct {
	// gate admits the callers that run, and queues a bounded number more.
	gate *admission
	rnd  io.Reader

	// argonKey and bcryptCompare do the expensive work; tests replace them
	// to hold a slot or to keep fuzzing cheap.
	argonKey      func(password, salt []byte, time, memory uint32, threads uint8, keyLen uint32) []byte
	bcryptCompare func(hash, password []byte) error

	dummyOnce sync.Once
	dummy     string
}

// newPasswordHasher returns a hasher running at most concurrency hashes at
// once (0 or less means runtime.NumCPU()) with up to queue more callers
// waiting (0 means 64, less than 0 means none), each up to
// defaultQueueTimeout, none before another. rnd supplies salts and must be
// safe for concurrent use; nil means crypto/rand.
func newPasswordHasher(concurrency, queue int, rnd io.Reader) *passwordHasher {
	if rnd == nil {
		rnd = rand.Reader
	}
	return &passwordHasher{
		gate:          hashGate(concurrency, queue, defaultQueueTimeout),
		rnd:           rnd,
		argonKey:      argon2.IDKey,
		bcryptCompare: bcrypt.CompareHashAndPassword,
	}
}

// hashGate is the admission of password hashes: concurrency and queue as
// [newPasswordHasher] takes them.
func hashGate(concurrency, queue int, timeout time.Duration) *admission {
	if concurrency <= 0 {
		concurrency = runtime.NumCPU()
	}
	switch {
	case queue == 0:
		queue = defaultHashQueue
	case queue < 0:
		queue = 0
	}
	return newAdmission(concurrency, queue, timeout)
}

// houseThreads is the threads of a new hash's argon2id run, and so the
// slots that a caller holds which may hash anew or run the dummy: a
// login, before it has read what is stored.
const houseThreads = hashfmt.Threads

// acquire waits for e.Weight slots, in e's turn (see admission). It fails
// with a [*RetryError] for [ErrOverloaded] when the queue is full, or the
// wait outlasts the queue's timeout or ctx's deadline, and with ctx.Err()
// if ctx is cancelled. On success the caller must call release with the
// slots it holds.
func (h *passwordHasher) acquire(ctx context.Context, e entrant) error {
	return h.gate.Acquire(ctx, e)
}

// release frees the weight slots a caller holds; none when weight is 0.
func (h *passwordHasher) release(weight int) {
	if weight > 0 {
		h.gate.Release(weight)
	}
}

// grow makes a caller that holds *held slots hold threads of them, when
// that is more: it learnt from the hash it read that its check runs as
// many threads (see [admission.Grow]). On failure it holds none, and
// *held is 0.
func (h *passwordHasher) grow(ctx context.Context, held *int, threads int) error {
	if threads <= *held {
		return nil
	}
	if err := h.gate.Grow(ctx, *held, threads); err != nil {
		*held = 0
		return err
	}
	*held = threads
	return nil
}

// hash returns the argon2id PHC string of password with the current
// parameters and a fresh salt. password should already be prepared with
// [checkPasswordPolicy].
func (h *passwordHasher) hash(ctx context.Context, password string) (string, error) {
	// A new hash is an administrator's or an account's own, never a
	// stranger's: it waits with the known.
	if err := h.acquire(ctx, entrant{Client: clientOfContext(ctx), Class: classKnown, Weight: houseThreads}); err != nil {
		return "", err
	}
	defer h.release(houseThreads)
	return h.hashHeld(password)
}

// hashHeld is hash for a caller that already holds a slot.
func (h *passwordHasher) hashHeld(password string) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := io.ReadFull(h.rnd, salt); err != nil {
		return "", fmt.Errorf("nmauth: reading password salt: %w", err)
	}
	p := currentArgonParams()
	key := h.argonKey([]byte(password), salt, p.Time, p.Memory, p.Threads, argonKeyLen)
	return encodeArgonHash(argonHash{Params: p, Salt: salt, Key: key}), nil
}

// verify reports whether password matches the stored hash encoded, and
// whether that hash should be replaced by a fresh one (see
// [hashfmt.Hash.Check]). upgrade is only ever true when ok is. It
// waits for as many slots as the hash's check runs threads. A malformed
// or unknown hash gives an error wrapping errMalformedHash, before any
// wait; a full queue or an ended ctx gives their errors.
func (h *passwordHasher) verify(ctx context.Context, encoded, password string) (ok, upgrade bool, err error) {
	hash, err := h.engines().Parse(hashfmt.Identify(encoded), encoded)
	if err != nil {
		return false, false, err
	}
	threads := hash.Threads()
	if err := h.acquire(ctx, entrant{Client: clientOfContext(ctx), Class: classNew, Weight: threads}); err != nil {
		return false, false, err
	}
	defer h.release(threads)
	return hash.Check(password)
}

// engines are the hasher's engines of hashfmt: the real work, or the
// stand-ins of a test.
func (h *passwordHasher) engines() hashfmt.Engines {
	return hashfmt.Engines{ArgonIDKey: h.argonKey, BcryptCompare: h.bcryptCompare}
}

// verifyDummy does the work of verifying password against a hash that
// matches nothing, so that a login for an unknown user takes as long as
// one for a known user. Its only error is that of the concurrency bound,
// so that an overload still answers as one. It names no account that
// exists, so it waits with the names no account has.
func (h *passwordHasher) verifyDummy(ctx context.Context, password string) error {
	if err := h.acquire(ctx, entrant{Client: clientOfContext(ctx), Class: classNobody, Weight: houseThreads}); err != nil {
		return err
	}
	defer h.release(houseThreads)
	_, _, _ = h.dummyHash().Check(password)
	return nil
}

// dummyHash is the hash that an account that does not exist is checked
// against, by a caller that holds the slots of the house's lanes: a house
// argon2id hash of random bytes rather than of a password, so that no
// password can be known to match it, and building it costs no argon2id
// run. Should rnd fail, zero bytes serve as well, since the dummy
// protects nothing.
func (h *passwordHasher) dummyHash() hashfmt.Hash {
	h.dummyOnce.Do(func() {
		buf := make([]byte, argonSaltLen+argonKeyLen)
		_, _ = io.ReadFull(h.rnd, buf)
		h.dummy = encodeArgonHash(argonHash{
			Params: currentArgonParams(),
			Salt:   buf[:argonSaltLen],
			Key:    buf[argonSaltLen:],
		})
	})
	d, _ := h.engines().Parse(hashfmt.Argon2id, h.dummy)
	return d
}

// checkPasswordPolicy prepares a new password as [preparePassword] does and
// requires 8 to 1024 bytes after preparation. The error never contains the
// password.
func checkPasswordPolicy(password string) (string, error) {
	p, err := preparePassword(password)
	if err != nil {
		return "", err
	}
	if len(p) < minPasswordLen {
		return "", fmt.Errorf("%w: shorter than %d bytes", ErrInvalidPassword, minPasswordLen)
	}
	if len(p) > maxPasswordLen {
		return "", fmt.Errorf("%w: longer than %d bytes", ErrInvalidPassword, maxPasswordLen)
	}
	return p, nil
}

// preparePassword prepares a password by the PRECIS OpaqueString profile
// (see [secret.PreparePassword]): the same password typed on another
// keyboard, with a non-ASCII space or in another Unicode normal form,
// prepares to the same string. It is used at login, where the length
// policy is not checked again, so that a password set under it still
// matches. The error never contains the password.
func preparePassword(password string) (string, error) {
	p, err := secret.PreparePassword(password)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidPassword, err)
	}
	return p, nil
}
