package hashfmt

import (
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
)

// The argon2id parameters of new hashes: the OWASP minimum (19 MiB, two
// passes, one lane). Stored hashes below them need an update.
const (
	Memory  = 19456 // KiB
	Time    = 2
	Threads = 1
	SaltLen = 16
	KeyLen  = 32
)

// Argon2idPrefix starts nmauth's own hashes.
const Argon2idPrefix = "$argon2id$"

// Bounds on parameters read from a stored or imported hash, so that one
// login costs at most what the house argon2id allows it (issue 38): at
// most 64 MiB and about a second of one core, on no more threads than the
// gate admits. A hash beyond them is refused by an import, naming the
// parameter, and a stored one is a broken record: nothing is computed.
//
// argon2 runs its lanes (p) at once, each on its own goroutine: p is held
// to MaxArgonThreads, and a check holds a slot of the hashing gate for
// each lane ([Hash.Threads]; a gate of fewer slots gives it all of its
// own), so that the gate's limit bounds the cores hashing takes. The work
// m*t, shared among the lanes, is held to maxArgonWork, so a hash of
// several lanes takes no more CPU than one of one lane, only sooner.
const (
	MaxArgonMemory  = 64 << 10 // KiB, 64 MiB
	maxArgonWork    = 4 * MaxArgonMemory
	MaxArgonTime    = 16
	MaxArgonThreads = 4
	MinArgonSaltLen = 8
	MaxArgonSaltLen = 64
	MinArgonKeyLen  = 16
	MaxArgonKeyLen  = 64
	MaxBcryptCost   = 14
)

// Params are the parameters of one argon2 hash.
type Params struct {
	Memory  uint32
	Time    uint32
	Threads uint8
}

// Current returns the parameters of new hashes. It is a function, not a
// variable, so that nothing can change them at run time.
func Current() Params {
	return Params{Memory: Memory, Time: Time, Threads: Threads}
}

// Argon2idHash is a parsed PHC argon2id string.
type Argon2idHash struct {
	Params
	Salt []byte
	Key  []byte
}

// WeakerThanCurrent reports whether a hash with these parameters is
// cheaper to attack than a new one would be.
func (a Argon2idHash) WeakerThanCurrent() bool {
	c := Current()
	return a.Memory < c.Memory || a.Time < c.Time ||
		len(a.Salt) < SaltLen || len(a.Key) < KeyLen
}

// Encode writes the PHC string form of a.
func (a Argon2idHash) Encode() string {
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("%sv=%d$m=%d,t=%d,p=%d$%s$%s", Argon2idPrefix, argon2.Version,
		a.Memory, a.Time, a.Threads, b64.EncodeToString(a.Salt), b64.EncodeToString(a.Key))
}

// argon2idCheck is a house argon2id hash, checked by its engine.
type argon2idCheck struct {
	e Engines
	Argon2idHash
}

func (c argon2idCheck) Threads() int { return int(c.Params.Threads) }

func (c argon2idCheck) Check(password string) (ok, needsUpdate bool, err error) {
	stored, p := c.Argon2idHash, c.Params
	key := c.e.ArgonIDKey([]byte(password), stored.Salt, p.Time, p.Memory, p.Threads, uint32(len(stored.Key)))
	if subtle.ConstantTimeCompare(key, stored.Key) != 1 {
		return false, false, nil
	}
	return true, stored.WeakerThanCurrent(), nil
}

// ParseArgon2id reads a PHC argon2id string strictly: fields in their
// canonical order, canonical decimals and base64, and parameters within
// the bounds above.
func ParseArgon2id(encoded string) (Argon2idHash, error) {
	var a Argon2idHash
	rest, found := strings.CutPrefix(encoded, Argon2idPrefix)
	if !found {
		return a, fmt.Errorf("%w: not argon2id", ErrMalformed)
	}
	fields := strings.Split(rest, "$")
	if len(fields) != 4 {
		return a, fmt.Errorf("%w: argon2id: want 4 fields after the algorithm", ErrMalformed)
	}
	if fields[0] != "v="+strconv.Itoa(argon2.Version) {
		return a, fmt.Errorf("%w: argon2id: unsupported version", ErrMalformed)
	}
	p, err := parseArgonParams(fields[1], "argon2id")
	if err != nil {
		return a, err
	}
	a.Params = p
	if a.Salt, err = decodeB64Field(fields[2], "salt", MinArgonSaltLen, MaxArgonSaltLen); err != nil {
		return a, err
	}
	if a.Key, err = decodeB64Field(fields[3], "key", MinArgonKeyLen, MaxArgonKeyLen); err != nil {
		return a, err
	}
	return a, nil
}

// parseArgonParams reads "m=<KiB>,t=<passes>,p=<lanes>" of algo. The
// lower bounds keep argon2.IDKey from panicking; the upper ones bound the
// work, and the error names the parameter beyond them.
func parseArgonParams(s, algo string) (Params, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return Params{}, fmt.Errorf("%w: %s: want m, t and p", ErrMalformed, algo)
	}
	m, errM := parseParam(parts[0], "m=", MaxArgonMemory)
	t, errT := parseParam(parts[1], "t=", MaxArgonTime)
	p, errP := parseParam(parts[2], "p=", MaxArgonThreads)
	for _, err := range []error{errM, errT, errP} {
		if err != nil {
			return Params{}, fmt.Errorf("%w: %s: %w", ErrMalformed, algo, err)
		}
	}
	if t < 1 || p < 1 || m < 8*p {
		return Params{}, fmt.Errorf("%w: %s: parameters too small", ErrMalformed, algo)
	}
	if uint64(m)*uint64(t) > maxArgonWork {
		return Params{}, fmt.Errorf("%w: %s: m*t = %d KiB passes above %d (64 MiB, 4 passes)", ErrMalformed, algo, uint64(m)*uint64(t), maxArgonWork)
	}
	return Params{Memory: m, Time: t, Threads: uint8(p)}, nil
}

// parseParam reads one "<name>=<decimal>" with no sign, no leading zero and
// a value at most limit. Its error names the parameter; the caller wraps
// it in ErrMalformed with the algorithm's name.
func parseParam(s, prefix string, limit uint32) (uint32, error) {
	digits, found := strings.CutPrefix(s, prefix)
	canonical := digits == "0" || digits != "" && digits[0] != '0'
	v, err := strconv.ParseUint(digits, 10, 64)
	switch {
	case found && canonical && (errors.Is(err, strconv.ErrRange) || err == nil && v > uint64(limit)):
		return 0, fmt.Errorf("parameter %s%s above %d", prefix, digits, limit)
	case !found || !canonical || err != nil:
		return 0, fmt.Errorf("bad parameter %s", strings.TrimSuffix(prefix, "="))
	}
	return uint32(v), nil
}

// decodeB64Field decodes unpadded standard base64, refusing any encoding
// but the canonical one, and checks the decoded length.
func decodeB64Field(s, name string, minLen, maxLen int) ([]byte, error) {
	// The decoder skips '\r' and '\n' even in strict mode; comparing with
	// the re-encoding refuses those and any other non-canonical form.
	b, err := base64.RawStdEncoding.Strict().DecodeString(s)
	if err != nil || base64.RawStdEncoding.EncodeToString(b) != s {
		return nil, fmt.Errorf("%w: argon2id: bad %s encoding", ErrMalformed, name)
	}
	if len(b) < minLen || len(b) > maxLen {
		return nil, fmt.Errorf("%w: argon2id: %s length %d outside %d..%d", ErrMalformed, name, len(b), minLen, maxLen)
	}
	return b, nil
}
