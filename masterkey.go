package nmauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"unicode/utf8"
)

// DefaultMasterKey is the well-known master key the service ships with. It
// is public knowledge, so it is refused unless insecure keys are allowed.
const DefaultMasterKey = "secretkey"

// minMasterKeyLen is the fewest characters a master key may have. A random
// key of this length is far beyond guessing; anything shorter is likely a
// word someone picked.
const minMasterKeyLen = 32

// ErrInsecureMasterKey is returned when the master key is the default or
// shorter than 32 characters and insecure keys are not allowed.
var ErrInsecureMasterKey = errors.New("nmauth: insecure master key")

// errEmptyMasterKey is not an [ErrInsecureMasterKey]: no setting makes an
// empty key acceptable, so it must not suggest that one would.
var errEmptyMasterKey = errors.New("nmauth: empty master key")

const envMasterKey = "MASTER_KEY"

// MasterKey is the master key bearer credential. It keeps only the SHA-256
// digest of the key, so neither a memory dump nor a stray log line yields
// the key itself. Use it through the pointer [NewMasterKey] or
// [LoadMasterKey] returns; the zero value matches nothing.
type MasterKey struct {
	// digest sits behind a pointer so that printing a copied MasterKey
	// value shows an address, not the digest.
	digest *[sha256.Size]byte
}

// NewMasterKey returns the [MasterKey] for key. An empty key is an error.
// The default key or one shorter than 32 characters is an
// error wrapping [ErrInsecureMasterKey] unless allowInsecure is set, in
// which case a warning goes to logger (nil means [slog.Default]). Neither
// the error nor the warning contains the key.
func NewMasterKey(key string, allowInsecure bool, logger *slog.Logger) (*MasterKey, error) {
	return newMasterKey(key, allowInsecure, logger, "")
}

func newMasterKey(key string, allowInsecure bool, logger *slog.Logger, src MasterKeySource) (*MasterKey, error) {
	if key == "" {
		return nil, errEmptyMasterKey
	}
	if reason := masterKeyWeakness(key); reason != "" {
		if !allowInsecure {
			return nil, fmt.Errorf("%w: %s", ErrInsecureMasterKey, reason)
		}
		if logger == nil {
			logger = slog.Default()
		}
		attrs := []any{slog.String("reason", reason)}
		if src != "" {
			attrs = append(attrs, slog.String("source", string(src)))
		}
		logger.Warn("nmauth: insecure master key allowed; do not run like this in production", attrs...)
	}
	d := sha256.Sum256([]byte(key))
	return &MasterKey{digest: &d}, nil
}

// masterKeyWeakness says why key is insecure, or returns "" if it is not.
// Length counts characters so that a few multi-byte runes cannot pass for
// a long key.
func masterKeyWeakness(key string) string {
	if key == DefaultMasterKey {
		return "it is the well-known default"
	}
	if utf8.RuneCountInString(key) < minMasterKeyLen {
		return fmt.Sprintf("it is shorter than %d characters", minMasterKeyLen)
	}
	return ""
}

// Check reports whether candidate is the master key. It compares digests
// of equal size in constant time, so neither the content nor the length
// of the key leaks through timing. A nil or zero MasterKey matches
// nothing.
func (k *MasterKey) Check(candidate string) bool {
	if k == nil || k.digest == nil {
		return false
	}
	d := digestString(candidate)
	return subtle.ConstantTimeCompare(d[:], k.digest[:]) == 1
}

// digestString returns SHA-256 of s without allocating: converting a long
// string to []byte would copy it to the heap on every request, so it is
// fed to the hash through a buffer on the stack instead.
func digestString(s string) [sha256.Size]byte {
	h := sha256.New()
	var buf [256]byte
	for len(s) > 0 {
		n := copy(buf[:], s)
		h.Write(buf[:n])
		s = s[n:]
	}
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return d
}

// String returns a fixed placeholder so that the key never reaches output.
func (k *MasterKey) String() string { return "[REDACTED]" }

// GoString returns the same placeholder as [MasterKey.String] for %#v.
func (k *MasterKey) GoString() string { return "[REDACTED]" }

// LogValue implements [slog.LogValuer] with a fixed placeholder.
func (k *MasterKey) LogValue() slog.Value { return slog.StringValue("[REDACTED]") }

// MasterKeySource tells where a master key came from, for log lines:
// [MasterKeyFromEnv] or [MasterKeyFromDefault] from [LoadMasterKey], or a
// source an application names itself, such as nmauthd's configuration
// file.
type MasterKeySource string

// Sources of the master key that [LoadMasterKey] reports.
const (
	// MasterKeyFromEnv means the MASTER_KEY environment variable.
	MasterKeyFromEnv MasterKeySource = "env MASTER_KEY"
	// MasterKeyFromDefault means no key was set and [DefaultMasterKey]
	// was used.
	MasterKeyFromDefault MasterKeySource = "default"
)

// MasterKeyOptions configures [LoadMasterKey].
type MasterKeyOptions struct {
	// Getenv reads an environment variable. Defaults to os.Getenv.
	Getenv func(string) string
	// AllowInsecure accepts the default key or a short one with a
	// warning instead of an error. Meant for development only. Defaults
	// to false.
	AllowInsecure bool
	// Logger receives the insecure-key warning. Defaults to
	// slog.Default().
	Logger *slog.Logger
}

// LoadMasterKey takes the master key from the MASTER_KEY environment
// variable, or when it is empty falls back to [DefaultMasterKey], and
// validates it with the rules of [NewMasterKey]. The [MasterKeySource]
// tells which supplied the key. An application that keeps its key
// elsewhere, say in its configuration file, gives it to [NewMasterKey].
func LoadMasterKey(opts MasterKeyOptions) (*MasterKey, MasterKeySource, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	key, src := getenv(envMasterKey), MasterKeyFromEnv
	if key == "" {
		key, src = DefaultMasterKey, MasterKeyFromDefault
	}
	mk, err := newMasterKey(key, opts.AllowInsecure, opts.Logger, src)
	if errors.Is(err, ErrInsecureMasterKey) {
		return nil, "", fmt.Errorf("%w (from %s); set %s to a random value of at least %d characters",
			err, src, envMasterKey, minMasterKeyLen)
	}
	if err != nil {
		return nil, "", err
	}
	return mk, src, nil
}
