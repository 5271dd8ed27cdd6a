// Package hashfmt is the one registry of the stored credential formats a
// login meets: nmauth's own argon2id, the machine-secret digest (whose form
// it reads and writes: checking one needs the root secrets), bcrypt, and the
// formats an import may bring from other systems (argon2i, scrypt,
// PBKDF2-SHA256 in PHC and Django form). A stored hash is identified once
// ([Identify]) and parsed once ([Engines.Parse]); the [Hash] found then
// says how many threads its check runs ([Hash.Threads]), and is asked to
// verify a password and whether it needs an update ([Hash.Check]), as
// Django's check_password does with identify_hasher, verify and
// must_update.
//
// Every parser bounds the parameters it reads before any work is done on
// them, so a planted record cannot make one login allocate gigabytes or
// spin for minutes. The package knows nothing of accounts, stores or the
// hashing gate; its caller holds as many slots of the gate as
// [Hash.Threads] around [Hash.Check], so that the gate's limit bounds
// the cores that hashing takes.
package hashfmt

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

// ErrMalformed is wrapped by every error about a stored hash that is not
// well formed, of no known format, or beyond the bounds of a login's work.
var ErrMalformed = errors.New("nmauth: malformed password hash")

// Format is what [Identify] finds a stored credential to be.
type Format uint8

// The formats, in the order [Identify] tries them.
const (
	Unknown       Format = iota // none of the below
	Argon2id                    // nmauth's own: "$argon2id$"
	MachineDigest               // a host's machine-secret digest: "$nmauth-hmac-sha256$k="
	Bcrypt                      // "$2a$", "$2b$" or "$2y$"
	Argon2i                     // imported: "$argon2i$"
	Scrypt                      // imported: "$scrypt$"
	PBKDF2                      // imported: "$pbkdf2-sha256$"
	DjangoPBKDF2                // imported: "pbkdf2_sha256$"
)

// MachineDigestPrefix starts the stored form of a machine secret.
const MachineDigestPrefix = "$nmauth-hmac-sha256$k="

// observer, when set, is called once for each credential Identify names.
var observer atomic.Pointer[func()]

// Observe has f called once for each stored credential [Identify] names,
// until the function it returns is called; tests count identifications
// with it.
func Observe(f func()) (stop func()) {
	observer.Store(&f)
	return func() { observer.Store(nil) }
}

// Identify names the format of a stored credential from its prefix alone,
// without parsing or spending any work on it.
func Identify(encoded string) Format {
	if f := observer.Load(); f != nil {
		(*f)()
	}
	switch {
	case strings.HasPrefix(encoded, Argon2idPrefix):
		return Argon2id
	case strings.HasPrefix(encoded, MachineDigestPrefix):
		return MachineDigest
	case isBcryptPrefix(encoded):
		return Bcrypt
	case strings.HasPrefix(encoded, argon2iPrefix):
		return Argon2i
	case strings.HasPrefix(encoded, scryptPrefix):
		return Scrypt
	case strings.HasPrefix(encoded, pbkdf2Prefix):
		return PBKDF2
	case strings.HasPrefix(encoded, djangoPBKDF2Prefix):
		return DjangoPBKDF2
	}
	return Unknown
}

// IsPassword reports whether f is a password hash that [Engines.Parse]
// reads: anything but a machine digest and the unknown.
func (f Format) IsPassword() bool { return f != Unknown && f != MachineDigest }

// Engines does the expensive work of verification. Tests replace its
// functions to hold a slot or to keep fuzzing cheap; [Default] is the
// real work.
type Engines struct {
	ArgonIDKey    func(password, salt []byte, time, memory uint32, threads uint8, keyLen uint32) []byte
	BcryptCompare func(hash, password []byte) error
}

// Default returns the engines of golang.org/x/crypto.
func Default() Engines {
	return Engines{ArgonIDKey: argon2.IDKey, BcryptCompare: bcrypt.CompareHashAndPassword}
}

// Hash is a stored password hash of one format of the registry, which
// [Engines.Parse] read and held to the bounds of a login's work, with the
// engines that check it.
type Hash interface {
	// Threads is how many threads a check runs at once: argon2's lanes
	// (p), which golang.org/x/crypto/argon2 runs each on a goroutine of
	// its own, at most [MaxArgonThreads]; one for the others, whose work
	// is one thread's: scrypt's lanes run one after another in
	// golang.org/x/crypto/scrypt, and bcrypt and PBKDF2 have none to
	// share. The caller of Check holds that many slots of the hashing
	// gate.
	Threads() int
	// Check reports whether password matches and whether the hash needs
	// an update: a bcrypt hash, an imported one, or an argon2id hash
	// weaker than [Current]. needsUpdate is only ever true when ok is. A
	// bcrypt hash its engine cannot read gives an error wrapping
	// [ErrMalformed].
	Check(password string) (ok, needsUpdate bool, err error)
}

// Parse reads encoded, a hash of format f as [Identify] named it, and
// bounds its parameters, without spending any work on it. A malformed
// hash, a machine digest or an unknown format gives an error wrapping
// [ErrMalformed].
func (e Engines) Parse(f Format, encoded string) (Hash, error) {
	switch f {
	case Argon2id:
		a, err := ParseArgon2id(encoded)
		if err != nil {
			return nil, err
		}
		return argon2idCheck{e, a}, nil
	case Bcrypt:
		if err := checkBcryptHash(encoded); err != nil {
			return nil, err
		}
		return bcryptCheck{e, encoded}, nil
	case Argon2i, Scrypt, PBKDF2, DjangoPBKDF2:
		h, err := parseImported(f, encoded)
		if err != nil {
			return nil, err
		}
		return importedCheck{h}, nil
	}
	return nil, fmt.Errorf("%w: unknown format", ErrMalformed)
}

// Parse is [Engines.Parse] with the [Default] engines.
func Parse(f Format, encoded string) (Hash, error) { return Default().Parse(f, encoded) }

// importedCheck is a hash of another system's format, which is replaced
// whenever it matches.
type importedCheck struct{ h importedHash }

func (c importedCheck) Threads() int { return c.h.threads() }

func (c importedCheck) Check(password string) (ok, needsUpdate bool, err error) {
	ok = c.h.matches(password)
	return ok, ok, nil
}

// Importable checks a hash given to an import without spending any work
// on it, and says why it is weak ("" when it is not). It accepts the
// formats a login verifies.
func Importable(encoded string) (weak string, err error) {
	switch f := Identify(encoded); f {
	case Argon2id:
		a, err := ParseArgon2id(encoded)
		if err != nil {
			return "", err
		}
		if a.WeakerThanCurrent() {
			return fmt.Sprintf("argon2id with m=%d,t=%d below m=%d,t=%d", a.Memory, a.Time, Memory, Time), nil
		}
		return "", nil
	case Bcrypt:
		return bcryptWeakness(encoded)
	default:
		parsed, err := parseImported(f, encoded)
		if err != nil {
			return "", err
		}
		return parsed.weakness(), nil
	}
}
