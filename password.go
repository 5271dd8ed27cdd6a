package nmauth

import (
	"fmt"
	"io"
	"time"

	"github.com/nmauth/nmauth/internal/hasher"
	"github.com/nmauth/nmauth/internal/hashfmt"
	"github.com/nmauth/nmauth/internal/secret"
)

// Password length bounds, in bytes after PRECIS preparation.
const (
	minPasswordLen = 8
	maxPasswordLen = secret.MaxLen
)

const overloadRetryAfter = time.Second

// passwordHasher hashes and verifies passwords under the hashing gate,
// whose slots are shared fairly among clients (see admission).
type passwordHasher = hasher.Hasher[accountKey]

// newPasswordHasher returns a hasher running at most concurrency hashes at
// once with up to queue more callers waiting (see [hasher.Limits]), each
// up to defaultQueueTimeout. rnd supplies salts; nil means crypto/rand.
func newPasswordHasher(concurrency, queue int, rnd io.Reader) *passwordHasher {
	return hasher.New(hashGate(concurrency, queue, defaultQueueTimeout), rnd)
}

// hashGate is the admission of password hashes: concurrency and queue as
// [newPasswordHasher] takes them.
func hashGate(concurrency, queue int, timeout time.Duration) *admission {
	limit, bound := hasher.Limits(concurrency, queue)
	return newAdmission(limit, bound, timeout)
}

// houseThreads is the slots that a caller holds which may hash anew or
// run the dummy: a login, before it has read what is stored.
const houseThreads = hashfmt.Threads

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
