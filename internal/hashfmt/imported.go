package hashfmt

import (
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/scrypt"
)

// The password hash formats of other systems that an import may bring
// (nmauth.ImportedUser), besides argon2id and bcrypt. Each is verified as
// its system would, and replaced by an argon2id hash (or a host's machine digest) at the account's first right
// login, so a store holds them only until then:
//
//	$argon2i$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt>$<key>   the PHC string of argon2i
//	$scrypt$ln=<log2 N>,r=<block size>,p=<lanes>$<salt>$<key>  the PHC string of scrypt
//	$pbkdf2-sha256$i=<iterations>,l=<key length>$<salt>$<key>  PBKDF2-HMAC-SHA256, PHC style
//	pbkdf2_sha256$<iterations>$<salt>$<key>                   Django's PBKDF2-HMAC-SHA256
//
// Salts and keys are base64, padded or not, but for Django's salt, which
// is text taken as it is.
const (
	argon2iPrefix      = "$argon2i$"
	scryptPrefix       = "$scrypt$"
	pbkdf2Prefix       = "$pbkdf2-sha256$"
	djangoPBKDF2Prefix = "pbkdf2_sha256$"
)

// Bounds on the parameters of an imported hash, of the order of
// the bounds on argon2id (64 MiB, about a second of one core):
// a planted record must not make one login allocate gigabytes or spin
// for minutes. argon2i is held to argon2id's bounds, and its lanes each
// hold a slot of the gate, as argon2id's do. scrypt's lanes (p) run one
// after another in golang.org/x/crypto/scrypt, on one thread, which holds
// one slot, so p is bounded by the work N*r*p alone. PBKDF2-SHA256 runs
// its iterations once for every 32 bytes of key, on one thread.
const (
	maxScryptMemory   = 64 << 20 // bytes: 128 * N * r
	maxScryptWork     = 1 << 21  // N * r * p, twice OWASP's N=2^17, r=8, p=1
	maxScryptLogN     = 30
	maxScryptR        = 1 << 16
	maxScryptLanes    = 1 << 16
	maxPBKDF2Rounds   = 2_000_000 // iterations times 32-byte blocks of key
	minImportedKeyLen = 16
	maxImportedKeyLen = 64
)

// The costs below which an imported hash is reported weak: scrypt's N*r*p = 2^20 (N = 2^17, r = 8, p = 1, or as much work
// spread otherwise) and PBKDF2-SHA256's 600 000 iterations are OWASP's
// Password Storage Cheat Sheet's minimums; argon2 is held to the
// parameters of new hashes.
const (
	weakScryptWork    = 1 << 20
	weakPBKDF2Rounds  = 600_000
	pbkdf2SHA256Block = 32
)

// importedHash is a parsed hash of another system's format.
type importedHash interface {
	// matches reports whether password is the hashed one, in constant
	// time once the key is derived.
	matches(password string) bool
	// weakness says why the hash is cheap to attack, "" when it is not.
	weakness() string
	// threads is how many threads matches runs at once (see
	// [Hash.Threads]).
	threads() int
}

// parseImported reads a hash of one of the imported formats, f as
// [Identify] named it; any other gives an error wrapping ErrMalformed.
func parseImported(f Format, encoded string) (importedHash, error) {
	switch f {
	case Argon2i:
		return parseArgon2i(encoded)
	case Scrypt:
		return parseScrypt(encoded)
	case PBKDF2:
		return parsePBKDF2(encoded)
	case DjangoPBKDF2:
		return parseDjangoPBKDF2(encoded)
	}
	return nil, fmt.Errorf("%w: unknown format", ErrMalformed)
}

// phcFields splits "$<id>$<fields>..." after its prefix into want fields.
func phcFields(encoded, prefix string, want int) ([]string, error) {
	fields := strings.Split(strings.TrimPrefix(encoded, prefix), "$")
	if len(fields) != want {
		return nil, fmt.Errorf("%w: %s: want %d fields after the algorithm", ErrMalformed, strings.Trim(prefix, "$_"), want)
	}
	return fields, nil
}

// phcParams reads "a=1,b=2,..." with exactly the names given, in order,
// each a canonical decimal at most its limit.
func phcParams(s, algo string, names []string, limits []uint32) ([]uint32, error) {
	parts := strings.Split(s, ",")
	if len(parts) != len(names) {
		return nil, fmt.Errorf("%w: %s: want parameters %s", ErrMalformed, algo, strings.Join(names, ","))
	}
	out := make([]uint32, len(parts))
	for i, p := range parts {
		v, err := parseParam(p, names[i]+"=", limits[i])
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrMalformed, algo, err)
		}
		out[i] = v
	}
	return out, nil
}

// decodeImportedB64 decodes standard base64, padded or not, and checks
// the decoded length.
func decodeImportedB64(s, algo, name string, minLen, maxLen int) ([]byte, error) {
	b, err := base64.RawStdEncoding.Strict().DecodeString(strings.TrimRight(s, "="))
	if err != nil || strings.ContainsAny(s, "\r\n") {
		return nil, fmt.Errorf("%w: %s: bad %s encoding", ErrMalformed, algo, name)
	}
	if len(b) < minLen || len(b) > maxLen {
		return nil, fmt.Errorf("%w: %s: %s length %d outside %d..%d", ErrMalformed, algo, name, len(b), minLen, maxLen)
	}
	return b, nil
}

// argon2iHash is a parsed PHC argon2i string.
type argon2iHash struct{ Argon2idHash }

func parseArgon2i(encoded string) (importedHash, error) {
	fields, err := phcFields(encoded, argon2iPrefix, 4)
	if err != nil {
		return nil, err
	}
	if fields[0] != "v="+strconv.Itoa(argon2.Version) {
		return nil, fmt.Errorf("%w: argon2i: unsupported version", ErrMalformed)
	}
	var a argon2iHash
	if a.Params, err = parseArgonParams(fields[1], "argon2i"); err != nil {
		return nil, err
	}
	if a.Salt, err = decodeImportedB64(fields[2], "argon2i", "salt", MinArgonSaltLen, MaxArgonSaltLen); err != nil {
		return nil, err
	}
	if a.Key, err = decodeImportedB64(fields[3], "argon2i", "key", MinArgonKeyLen, MaxArgonKeyLen); err != nil {
		return nil, err
	}
	return a, nil
}

func (a argon2iHash) matches(password string) bool {
	key := argon2.Key([]byte(password), a.Salt, a.Time, a.Memory, a.Threads, uint32(len(a.Key)))
	return subtle.ConstantTimeCompare(key, a.Key) == 1
}

// threads is argon2i's lanes, which golang.org/x/crypto/argon2 runs at
// once.
func (a argon2iHash) threads() int { return int(a.Threads) }

func (a argon2iHash) weakness() string {
	if a.WeakerThanCurrent() {
		return fmt.Sprintf("argon2i with m=%d,t=%d below m=%d,t=%d", a.Memory, a.Time, Memory, Time)
	}
	return ""
}

// scryptHash is a parsed PHC scrypt string.
type scryptHash struct {
	logN, r, p uint32
	salt, key  []byte
}

func parseScrypt(encoded string) (importedHash, error) {
	fields, err := phcFields(encoded, scryptPrefix, 3)
	if err != nil {
		return nil, err
	}
	v, err := phcParams(fields[0], "scrypt", []string{"ln", "r", "p"}, []uint32{maxScryptLogN, maxScryptR, maxScryptLanes})
	if err != nil {
		return nil, err
	}
	s := scryptHash{logN: v[0], r: v[1], p: v[2]}
	if err := s.checkBounds(); err != nil {
		return nil, err
	}
	if s.salt, err = decodeImportedB64(fields[1], "scrypt", "salt", MinArgonSaltLen, MaxArgonSaltLen); err != nil {
		return nil, err
	}
	if s.key, err = decodeImportedB64(fields[2], "scrypt", "key", minImportedKeyLen, maxImportedKeyLen); err != nil {
		return nil, err
	}
	return s, nil
}

// checkBounds holds s to the memory and the work of the bounds above,
// naming the parameter beyond them.
func (s scryptHash) checkBounds() error {
	n := uint64(1) << s.logN
	switch {
	case s.logN < 1 || s.r < 1 || s.p < 1:
		return fmt.Errorf("%w: scrypt: ln, r and p must be at least 1", ErrMalformed)
	case 128*n*uint64(s.r) > maxScryptMemory:
		return fmt.Errorf("%w: scrypt: ln=%d,r=%d needs 128*N*r = %d MiB, above %d MiB", ErrMalformed,
			s.logN, s.r, 128*n*uint64(s.r)>>20, maxScryptMemory>>20)
	case n*uint64(s.r)*uint64(s.p) > maxScryptWork:
		return fmt.Errorf("%w: scrypt: ln=%d,r=%d,p=%d is N*r*p = 2^%.1f, above 2^21", ErrMalformed,
			s.logN, s.r, s.p, math.Log2(float64(n*uint64(s.r)*uint64(s.p))))
	}
	return nil
}

func (s scryptHash) matches(password string) bool {
	key, err := scrypt.Key([]byte(password), s.salt, 1<<s.logN, int(s.r), int(s.p), len(s.key))
	return err == nil && subtle.ConstantTimeCompare(key, s.key) == 1
}

// threads is one: golang.org/x/crypto/scrypt runs the lanes one after
// another.
func (s scryptHash) threads() int { return 1 }

func (s scryptHash) weakness() string {
	if work := (uint64(1) << s.logN) * uint64(s.r) * uint64(s.p); work < weakScryptWork {
		return fmt.Sprintf("scrypt N=2^%d,r=%d,p=%d below N*r*p = 2^20", s.logN, s.r, s.p)
	}
	return ""
}

// pbkdf2Hash is a parsed PBKDF2-HMAC-SHA256 hash of either form.
type pbkdf2Hash struct {
	rounds    uint32
	salt, key []byte
}

func parsePBKDF2(encoded string) (importedHash, error) {
	fields, err := phcFields(encoded, pbkdf2Prefix, 3)
	if err != nil {
		return nil, err
	}
	v, err := phcParams(fields[0], "pbkdf2-sha256", []string{"i", "l"}, []uint32{math.MaxUint32, maxImportedKeyLen})
	if err != nil {
		return nil, err
	}
	h := pbkdf2Hash{rounds: v[0]}
	if h.salt, err = decodeImportedB64(fields[1], "pbkdf2-sha256", "salt", MinArgonSaltLen, MaxArgonSaltLen); err != nil {
		return nil, err
	}
	if h.key, err = decodeImportedB64(fields[2], "pbkdf2-sha256", "key", minImportedKeyLen, maxImportedKeyLen); err != nil {
		return nil, err
	}
	if h.rounds < 1 || int(v[1]) != len(h.key) {
		return nil, fmt.Errorf("%w: pbkdf2-sha256: no rounds, or l is not the key's length", ErrMalformed)
	}
	return h, h.checkBounds("pbkdf2-sha256", "i")
}

func parseDjangoPBKDF2(encoded string) (importedHash, error) {
	fields, err := phcFields(encoded, djangoPBKDF2Prefix, 3)
	if err != nil {
		return nil, err
	}
	rounds, err := parseParam("i="+fields[0], "i=", math.MaxUint32)
	if err != nil || rounds < 1 {
		return nil, fmt.Errorf("%w: pbkdf2_sha256: bad iterations", ErrMalformed)
	}
	if len(fields[1]) < 1 || len(fields[1]) > MaxArgonSaltLen {
		return nil, fmt.Errorf("%w: pbkdf2_sha256: salt length outside 1..%d", ErrMalformed, MaxArgonSaltLen)
	}
	key, err := decodeImportedB64(fields[2], "pbkdf2_sha256", "key", minImportedKeyLen, maxImportedKeyLen)
	if err != nil {
		return nil, err
	}
	h := pbkdf2Hash{rounds: rounds, salt: []byte(fields[1]), key: key}
	return h, h.checkBounds("pbkdf2_sha256", "iterations")
}

// checkBounds holds h's work, its iterations times the 32-byte blocks of
// its key, to maxPBKDF2Rounds, naming the parameter (param of algo).
func (h pbkdf2Hash) checkBounds(algo, param string) error {
	blocks := (len(h.key) + pbkdf2SHA256Block - 1) / pbkdf2SHA256Block
	if uint64(h.rounds)*uint64(blocks) > maxPBKDF2Rounds {
		return fmt.Errorf("%w: %s: %s=%d for %d bytes of key is above %d iterations of 32 bytes", ErrMalformed,
			algo, param, h.rounds, len(h.key), maxPBKDF2Rounds)
	}
	return nil
}

func (h pbkdf2Hash) matches(password string) bool {
	key, err := pbkdf2.Key(sha256.New, password, h.salt, int(h.rounds), len(h.key))
	return err == nil && subtle.ConstantTimeCompare(key, h.key) == 1
}

func (h pbkdf2Hash) threads() int { return 1 }

func (h pbkdf2Hash) weakness() string {
	if h.rounds < weakPBKDF2Rounds {
		return fmt.Sprintf("PBKDF2-SHA256 with %d iterations below %d", h.rounds, weakPBKDF2Rounds)
	}
	return ""
}
