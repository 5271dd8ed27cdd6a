package nmauth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/text/secure/precis"
)

// The argon2id parameters of new hashes: the OWASP minimum (19 MiB, two
// passes, one lane). Stored hashes below them are upgraded at login.
const (
	argonMemory  = 19456 // KiB
	argonTime    = 2
	argonThreads = 1
	argonSaltLen = 16
	argonKeyLen  = 32
)

// Bounds on parameters read from a stored or imported hash, so that one
// login costs at most what the house argon2id allows it (issue 38): at
// most 64 MiB and about a second of one core, on as many threads as the
// gate admits. A hash beyond them is refused by an import, naming the
// parameter, and a stored one is a broken record: nothing is computed.
//
// argon2 runs its lanes (p) at once, each on its own goroutine, while the
// gate admits a hash as one slot: p is held to maxArgonThreads, and the
// work m*t, shared among the lanes, to maxArgonWork, so a hash of several
// lanes takes no more CPU than one of one lane, only sooner.
const (
	maxArgonMemory  = 64 << 10 // KiB, 64 MiB
	maxArgonWork    = 4 * maxArgonMemory
	maxArgonTime    = 16
	maxArgonThreads = 4
	minArgonSaltLen = 8
	maxArgonSaltLen = 64
	minArgonKeyLen  = 16
	maxArgonKeyLen  = 64
	maxBcryptCost   = 14
)

// Password length bounds, in bytes after PRECIS preparation.
const (
	minPasswordLen = 8
	maxPasswordLen = 1024
)

const (
	defaultHashQueue    = 64
	overloadRetryAfter  = time.Second
	argonPrefix         = "$argon2id$"
	bcryptEncodedLength = 60
)

// errMalformedHash is returned by verification for a stored hash that is
// not a well-formed argon2id or bcrypt hash, or one of the imported
// formats of hashformat.go, within the bounds above.
var errMalformedHash = errors.New("nmauth: malformed password hash")

// argonParams are the parameters of one argon2id hash.
type argonParams struct {
	memory  uint32
	time    uint32
	threads uint8
}

// currentArgonParams returns the parameters of new hashes. It is a
// function, not a variable, so that nothing can change them at run time.
func currentArgonParams() argonParams {
	return argonParams{memory: argonMemory, time: argonTime, threads: argonThreads}
}

// argonHash is a parsed PHC argon2id string.
type argonHash struct {
	argonParams
	salt []byte
	key  []byte
}

// passwordHasher hashes and verifies passwords under a concurrency bound:
// each argon2id call holds 19 MiB, so running every login at once would
// let a flood of requests exhaust memory. Its slots are shared fairly
// among clients (see admission).
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

// acquire waits for a slot, in e's turn (see admission). It fails with
// a [*RetryError] for [ErrOverloaded] when the queue is full, or the wait
// outlasts the queue's timeout or ctx's deadline, and with ctx.Err() if
// ctx is cancelled. On success the caller must call release.
func (h *passwordHasher) acquire(ctx context.Context, e entrant) (release func(), err error) {
	if err := h.gate.acquire(ctx, e); err != nil {
		return nil, err
	}
	return h.gate.release, nil
}

// hash returns the argon2id PHC string of password with the current
// parameters and a fresh salt. password should already be prepared with
// [checkPasswordPolicy].
func (h *passwordHasher) hash(ctx context.Context, password string) (string, error) {
	// A new hash is an administrator's or an account's own, never a
	// stranger's: it waits with the known.
	release, err := h.acquire(ctx, entrant{client: clientOfContext(ctx), class: classKnown})
	if err != nil {
		return "", err
	}
	defer release()
	return h.hashHeld(password)
}

// hashHeld is hash for a caller that already holds a slot.
func (h *passwordHasher) hashHeld(password string) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := io.ReadFull(h.rnd, salt); err != nil {
		return "", fmt.Errorf("nmauth: reading password salt: %w", err)
	}
	p := currentArgonParams()
	key := h.argonKey([]byte(password), salt, p.time, p.memory, p.threads, argonKeyLen)
	return encodeArgonHash(argonHash{argonParams: p, salt: salt, key: key}), nil
}

// verify reports whether password matches the stored hash encoded, and
// whether that hash should be replaced by a fresh one: a bcrypt hash, an
// imported one of another format (see hashformat.go), or an argon2id hash
// weaker than the current parameters. upgrade is only
// ever true when ok is. A malformed or unknown hash gives an error wrapping
// errMalformedHash; a full queue or an ended ctx gives their errors.
func (h *passwordHasher) verify(ctx context.Context, encoded, password string) (ok, upgrade bool, err error) {
	release, err := h.acquire(ctx, entrant{client: clientOfContext(ctx), class: classNew})
	if err != nil {
		return false, false, err
	}
	defer release()
	return h.check(encoded, password)
}

// check is verify for a caller that already holds a slot. Its only error
// wraps errMalformedHash.
func (h *passwordHasher) check(encoded, password string) (ok, upgrade bool, err error) {
	switch {
	case strings.HasPrefix(encoded, argonPrefix):
		return h.verifyArgon(encoded, password)
	case isBcryptPrefix(encoded):
		return h.verifyBcrypt(encoded, password)
	default:
		return h.checkImported(encoded, password)
	}
}

func (h *passwordHasher) verifyArgon(encoded, password string) (ok, upgrade bool, err error) {
	stored, err := parseArgonHash(encoded)
	if err != nil {
		return false, false, err
	}
	p := stored.argonParams
	key := h.argonKey([]byte(password), stored.salt, p.time, p.memory, p.threads, uint32(len(stored.key)))
	if subtle.ConstantTimeCompare(key, stored.key) != 1 {
		return false, false, nil
	}
	return true, stored.weakerThanCurrent(), nil
}

func (h *passwordHasher) verifyBcrypt(encoded, password string) (ok, upgrade bool, err error) {
	if err := checkBcryptHash(encoded); err != nil {
		return false, false, err
	}
	err = h.bcryptCompare([]byte(encoded), []byte(password))
	switch {
	case err == nil:
		return true, true, nil
	case errors.Is(err, bcrypt.ErrMismatchedHashAndPassword):
		return false, false, nil
	default:
		return false, false, fmt.Errorf("%w: bcrypt: %w", errMalformedHash, err)
	}
}

// verifyDummy does the work of verifying password against a hash that
// matches nothing, so that a login for an unknown user takes as long as
// one for a known user. Its only error is that of the concurrency bound,
// so that an overload still answers as one. It names no account that
// exists, so it waits with the names no account has.
func (h *passwordHasher) verifyDummy(ctx context.Context, password string) error {
	release, err := h.acquire(ctx, entrant{client: clientOfContext(ctx), class: classNobody})
	if err != nil {
		return err
	}
	defer release()
	h.checkDummy(password)
	return nil
}

// checkDummy is verifyDummy for a caller that already holds a slot.
func (h *passwordHasher) checkDummy(password string) {
	h.dummyOnce.Do(h.makeDummy)
	_, _, _ = h.check(h.dummy, password)
}

// makeDummy builds the dummy hash from random bytes rather than from a
// password: no password can be known to match it, and building it costs
// no argon2id run. Should rnd fail, zero bytes serve as well, since the
// dummy protects nothing.
func (h *passwordHasher) makeDummy() {
	buf := make([]byte, argonSaltLen+argonKeyLen)
	_, _ = io.ReadFull(h.rnd, buf)
	h.dummy = encodeArgonHash(argonHash{
		argonParams: currentArgonParams(),
		salt:        buf[:argonSaltLen],
		key:         buf[argonSaltLen:],
	})
}

// weakerThanCurrent reports whether a hash with these parameters is cheaper
// to attack than a new one would be.
func (a argonHash) weakerThanCurrent() bool {
	c := currentArgonParams()
	return a.memory < c.memory || a.time < c.time ||
		len(a.salt) < argonSaltLen || len(a.key) < argonKeyLen
}

// encodeArgonHash writes the PHC string form of a.
func encodeArgonHash(a argonHash) string {
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("%sv=%d$m=%d,t=%d,p=%d$%s$%s", argonPrefix, argon2.Version,
		a.memory, a.time, a.threads, b64.EncodeToString(a.salt), b64.EncodeToString(a.key))
}

// parseArgonHash reads a PHC argon2id string strictly: fields in their
// canonical order, canonical decimals and base64, and parameters within
// the bounds above.
func parseArgonHash(encoded string) (argonHash, error) {
	var a argonHash
	rest, found := strings.CutPrefix(encoded, argonPrefix)
	if !found {
		return a, fmt.Errorf("%w: not argon2id", errMalformedHash)
	}
	fields := strings.Split(rest, "$")
	if len(fields) != 4 {
		return a, fmt.Errorf("%w: argon2id: want 4 fields after the algorithm", errMalformedHash)
	}
	if fields[0] != "v="+strconv.Itoa(argon2.Version) {
		return a, fmt.Errorf("%w: argon2id: unsupported version", errMalformedHash)
	}
	p, err := parseArgonParams(fields[1], "argon2id")
	if err != nil {
		return a, err
	}
	a.argonParams = p
	if a.salt, err = decodeB64Field(fields[2], "salt", minArgonSaltLen, maxArgonSaltLen); err != nil {
		return a, err
	}
	if a.key, err = decodeB64Field(fields[3], "key", minArgonKeyLen, maxArgonKeyLen); err != nil {
		return a, err
	}
	return a, nil
}

// parseArgonParams reads "m=<KiB>,t=<passes>,p=<lanes>" of algo. The
// lower bounds keep argon2.IDKey from panicking; the upper ones bound the
// work, and the error names the parameter beyond them.
func parseArgonParams(s, algo string) (argonParams, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return argonParams{}, fmt.Errorf("%w: %s: want m, t and p", errMalformedHash, algo)
	}
	m, errM := parseParam(parts[0], "m=", maxArgonMemory)
	t, errT := parseParam(parts[1], "t=", maxArgonTime)
	p, errP := parseParam(parts[2], "p=", maxArgonThreads)
	for _, err := range []error{errM, errT, errP} {
		if err != nil {
			return argonParams{}, fmt.Errorf("%w: %s: %w", errMalformedHash, algo, err)
		}
	}
	if t < 1 || p < 1 || m < 8*p {
		return argonParams{}, fmt.Errorf("%w: %s: parameters too small", errMalformedHash, algo)
	}
	if uint64(m)*uint64(t) > maxArgonWork {
		return argonParams{}, fmt.Errorf("%w: %s: m*t = %d KiB passes above %d (64 MiB, 4 passes)", errMalformedHash, algo, uint64(m)*uint64(t), maxArgonWork)
	}
	return argonParams{memory: m, time: t, threads: uint8(p)}, nil
}

// parseParam reads one "<name>=<decimal>" with no sign, no leading zero and
// a value at most limit. Its error names the parameter; the caller wraps
// it in errMalformedHash with the algorithm's name.
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
		return nil, fmt.Errorf("%w: argon2id: bad %s encoding", errMalformedHash, name)
	}
	if len(b) < minLen || len(b) > maxLen {
		return nil, fmt.Errorf("%w: argon2id: %s length %d outside %d..%d", errMalformedHash, name, len(b), minLen, maxLen)
	}
	return b, nil
}

// isBcryptPrefix accepts the bcrypt variants that share one algorithm.
// $2x$ marks hashes from a buggy implementation and is refused with the
// other unknown formats.
func isBcryptPrefix(s string) bool {
	return strings.HasPrefix(s, "$2a$") || strings.HasPrefix(s, "$2b$") || strings.HasPrefix(s, "$2y$")
}

// checkBcryptHash checks the shape "$2b$NN$" + 53 characters of bcrypt's
// base64 alphabet and bounds the cost, before any work is spent on it.
func checkBcryptHash(s string) error {
	if len(s) != bcryptEncodedLength || s[6] != '$' {
		return fmt.Errorf("%w: bcrypt: bad shape", errMalformedHash)
	}
	if !isDigit(s[4]) || !isDigit(s[5]) {
		return fmt.Errorf("%w: bcrypt: bad cost", errMalformedHash)
	}
	cost := int(s[4]-'0')*10 + int(s[5]-'0')
	if cost < bcrypt.MinCost || cost > maxBcryptCost {
		return fmt.Errorf("%w: bcrypt: cost %d outside %d..%d", errMalformedHash, cost, bcrypt.MinCost, maxBcryptCost)
	}
	for _, c := range s[7:] {
		if !isBcryptB64(c) {
			return fmt.Errorf("%w: bcrypt: bad encoding", errMalformedHash)
		}
	}
	return nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isBcryptB64(c rune) bool {
	return c == '.' || c == '/' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
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

// preparePassword applies the PRECIS OpaqueString profile (RFC 8265): the
// same password typed on another keyboard, with a non-ASCII space or in
// another Unicode normal form, prepares to the same string. It is used at
// login, where the length policy is not checked again, so that a password
// set under it still matches. The error never contains the password.
func preparePassword(password string) (string, error) {
	if password == "" {
		return "", fmt.Errorf("%w: empty; a password is required", ErrInvalidPassword)
	}
	if printableASCII(password) {
		// OpaqueString keeps every printable ASCII character as it is
		// (TestPreparePasswordPrintableASCII), and a machine's password
		// is one on every login: the profile's work is spared.
		return password, nil
	}
	// The PRECIS package turns each invalid byte into U+FFFD, which would
	// make distinct byte strings the same password.
	if !utf8.ValidString(password) {
		return "", fmt.Errorf("%w: not valid UTF-8", ErrInvalidPassword)
	}
	p, err := precis.OpaqueString.String(password)
	if err != nil {
		return "", fmt.Errorf("%w: it holds a character no password may hold, such as a control character (PRECIS OpaqueString)", ErrInvalidPassword)
	}
	return p, nil
}
