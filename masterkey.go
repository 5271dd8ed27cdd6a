package nmauth

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// DefaultMasterKey is the well-known master key the service ships with. It
// is public knowledge, so it is refused unless insecure keys are allowed.
const DefaultMasterKey = "secretkey"

// MinMasterKeyLen is the fewest characters a master key may have. A random
// key of this length is far beyond guessing; anything shorter is likely a
// word someone picked.
const MinMasterKeyLen = 32

// ErrInsecureMasterKey is returned when the master key is the default or
// shorter than [MinMasterKeyLen] and insecure keys are not allowed.
var ErrInsecureMasterKey = errors.New("nmauth: insecure master key")

// errEmptyMasterKey is not an [ErrInsecureMasterKey]: no setting makes an
// empty key acceptable, so it must not suggest that one would.
var errEmptyMasterKey = errors.New("nmauth: empty master key")

const (
	envMasterKey      = "MASTER_KEY"
	envEnvironment    = "NMAUTH_ENV"
	defaultEnv        = "dev"
	maxEnvNameLen     = 64
	maxConfigFileSize = 1 << 20
)

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
// The default key or one shorter than [MinMasterKeyLen] characters is an
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
	if utf8.RuneCountInString(key) < MinMasterKeyLen {
		return fmt.Sprintf("it is shorter than %d characters", MinMasterKeyLen)
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

// MasterKeySource tells where [LoadMasterKey] found the master key, for log
// lines: [MasterKeyFromEnv], [MasterKeyFromDefault], or the slash-separated
// path of the YAML file relative to the base directory, such as
// "config/environments/dev.yaml".
type MasterKeySource string

// Sources of the master key other than a configuration file.
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
	// Dir is the base directory that holds config/. Defaults to ".".
	Dir string
	// AllowInsecure accepts the default key or a short one with a
	// warning instead of an error. Meant for development only. Defaults
	// to false.
	AllowInsecure bool
	// Logger receives the insecure-key warning. Defaults to
	// slog.Default().
	Logger *slog.Logger
}

// LoadMasterKey finds the master key and validates it with the rules of
// [NewMasterKey]. It looks, in order, at the MASTER_KEY environment
// variable if not empty; then at server.masterkey in
// <Dir>/config/environments/<env>.yaml, where env is NMAUTH_ENV (default
// "dev", letters, digits, '-' and '_' only); then falls back to
// [DefaultMasterKey]. A missing file or an empty or absent
// server.masterkey moves on to the next step; an unreadable or malformed
// file is an error naming the file. The [MasterKeySource] tells which step
// supplied the key.
func LoadMasterKey(opts MasterKeyOptions) (*MasterKey, MasterKeySource, error) {
	getenv, dir := opts.Getenv, opts.Dir
	if getenv == nil {
		getenv = os.Getenv
	}
	if dir == "" {
		dir = "."
	}
	env := getenv(envEnvironment)
	if env == "" {
		env = defaultEnv
	}
	if err := validateEnvName(env); err != nil {
		return nil, "", err
	}
	rel := "config/environments/" + env + ".yaml"
	key, src, err := findMasterKey(getenv, dir, rel)
	if err != nil {
		return nil, "", err
	}
	mk, err := newMasterKey(key, opts.AllowInsecure, opts.Logger, src)
	if errors.Is(err, ErrInsecureMasterKey) {
		return nil, "", fmt.Errorf("%w (from %s); set %s or server.masterkey in %s to a random value of at least %d characters",
			err, src, envMasterKey, rel, MinMasterKeyLen)
	}
	if err != nil {
		return nil, "", err
	}
	return mk, src, nil
}

// validateEnvName keeps NMAUTH_ENV a plain file name so that it cannot
// point outside config/environments/.
func validateEnvName(env string) error {
	if len(env) > maxEnvNameLen {
		return fmt.Errorf("nmauth: %s is longer than %d characters", envEnvironment, maxEnvNameLen)
	}
	for _, r := range env {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
		if !ok {
			return fmt.Errorf("nmauth: %s %q may hold only letters, digits, '-' and '_'", envEnvironment, env)
		}
	}
	return nil
}

// findMasterKey applies the lookup order of [LoadMasterKey].
func findMasterKey(getenv func(string) string, dir, rel string) (string, MasterKeySource, error) {
	if key := getenv(envMasterKey); key != "" {
		return key, MasterKeyFromEnv, nil
	}
	path := filepath.Join(dir, filepath.FromSlash(rel))
	key, err := readMasterKeyFile(path)
	if err != nil {
		return "", "", err
	}
	if key != "" {
		return key, MasterKeySource(rel), nil
	}
	return DefaultMasterKey, MasterKeyFromDefault, nil
}

// readMasterKeyFile returns server.masterkey from the YAML file at path,
// or "" if the file does not exist or sets no key.
func readMasterKeyFile(path string) (string, error) {
	data, err := readSmallFile(path, maxConfigFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("nmauth: reading master key from %s: %w", path, err)
	}
	key, err := masterKeyFromYAML(data)
	if err != nil {
		return "", fmt.Errorf("nmauth: reading master key from %s: %w", path, err)
	}
	return key, nil
}

// readSmallFile reads at most limit bytes and fails on a larger file, so a
// misplaced huge file cannot stall startup.
func readSmallFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("file is larger than %d bytes", limit)
	}
	return data, nil
}

// masterKeyFromYAML walks the parsed document by hand instead of decoding
// into a struct: the decoder's type errors quote part of the offending
// value, which here may be the key.
func masterKeyFromYAML(data []byte) (string, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return "", nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", fmt.Errorf("malformed YAML: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return "", nil
	}
	root := resolveAlias(doc.Content[0])
	if isNull(root) {
		return "", nil
	}
	if root.Kind != yaml.MappingNode {
		return "", errors.New("the document must be a mapping")
	}
	server, err := mappingValue(root, "server")
	if err != nil || server == nil || isNull(server) {
		return "", err
	}
	if server.Kind != yaml.MappingNode {
		return "", errors.New("server must be a mapping")
	}
	key, err := mappingValue(server, "masterkey")
	if err != nil || key == nil || isNull(key) {
		return "", err
	}
	if key.Kind != yaml.ScalarNode || key.ShortTag() != "!!str" {
		return "", errors.New("server.masterkey must be a string (quote it)")
	}
	return key.Value, nil
}

// mappingValue returns the value under name in the mapping m, or nil. A
// repeated name is an error: which of the two would win is not obvious to
// whoever edits the file.
func mappingValue(m *yaml.Node, name string) (*yaml.Node, error) {
	var found *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if k.ShortTag() == "!!merge" {
			return nil, errors.New("merge keys (<<) are not supported")
		}
		if k.Kind != yaml.ScalarNode || k.Value != name {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("%s appears more than once", name)
		}
		found = resolveAlias(m.Content[i+1])
	}
	return found, nil
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}
