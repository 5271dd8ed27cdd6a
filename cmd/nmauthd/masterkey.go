package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/nmauth/nmauth"
)

// defaultMasterKey is the well-known master key Netmaker ships with, and
// nmauthd's last resort, which the library refuses unless insecure keys
// are allowed (--dev).
const defaultMasterKey = "secretkey"

// masterKeySource tells where the master key came from, for log lines: the
// environment, a configuration file's path, or the default.
type masterKeySource string

const (
	masterKeyFromEnv     masterKeySource = "env MASTER_KEY"
	masterKeyFromDefault masterKeySource = "default"
)

const (
	envMasterKey      = "MASTER_KEY"
	envEnvironment    = "NMAUTH_ENV"
	defaultEnv        = "dev"
	maxEnvNameLen     = 64
	maxConfigFileSize = 1 << 20
)

// loadMasterKey finds nmauthd's master key where Netmaker's server finds
// its own, so that a Netmaker deployment keeps its key: the MASTER_KEY
// environment variable if not empty; then server.masterkey in
// <dir>/config/environments/<env>.yaml, where env is NMAUTH_ENV (default
// "dev", letters, digits, '-' and '_' only); then [defaultMasterKey], which,
// as a well-known key, the library accepts only with --dev (dev), with a
// warning. A key that is long enough but does not read as random
// (nmauth.ErrWeakMasterKey) is accepted, with a warning, with --dev or
// --allow-weak-master-key (weakOK). A missing file or an empty or absent
// server.masterkey moves on to the next step; an unreadable or malformed
// file is an error naming the file. The source says which step supplied
// the key: the file's slash-separated path relative to dir, the
// environment or the default.
func loadMasterKey(getenv func(string) string, dir string, dev, weakOK bool, log *slog.Logger) (*nmauth.MasterKey, masterKeySource, error) {
	env := getenv(envEnvironment)
	if env == "" {
		env = defaultEnv
	}
	if err := validateEnvName(env); err != nil {
		return nil, "", fmt.Errorf("no usable master key: %w", err)
	}
	rel := "config/environments/" + env + ".yaml"
	const tryDev = "or run with --dev to try nmauthd on loopback with the default key"
	mk, err := masterKeyFromFile(getenv, dir, rel, dev, weakOK, log)
	switch {
	case errors.Is(err, nmauth.ErrWeakMasterKey):
		return nil, "", fmt.Errorf("%w (from %s); set server.masterkey in %s or %s to a random key (openssl rand -base64 32), "+
			"or start with --allow-weak-master-key to accept this one", err, rel, rel, envMasterKey)
	case errors.Is(err, nmauth.ErrInsecureMasterKey):
		return nil, "", fmt.Errorf("%w (from %s); set %s or server.masterkey in %s to a random value of at least %d characters; %s",
			err, rel, envMasterKey, rel, 32, tryDev)
	case err != nil:
		return nil, "", fmt.Errorf("no usable master key: %w; set %s or server.masterkey in %s", err, envMasterKey, rel)
	case mk != nil:
		return mk, masterKeySource(rel), nil
	}
	key, src := getenv(envMasterKey), masterKeyFromEnv
	if key == "" {
		key, src = defaultMasterKey, masterKeyFromDefault
	}
	mk, err = newMasterKey(key, dev, weakOK, log.With("source", string(src)))
	switch {
	case errors.Is(err, nmauth.ErrWeakMasterKey):
		return nil, "", fmt.Errorf("%w (from %s); set %s to a random key (openssl rand -base64 32), "+
			"or start with --allow-weak-master-key to accept this one", err, src, envMasterKey)
	case errors.Is(err, nmauth.ErrInsecureMasterKey):
		return nil, "", fmt.Errorf("%w (from %s); set %s to a random value of at least %d characters, or server.masterkey in %s; %s",
			err, src, envMasterKey, 32, rel, tryDev)
	case err != nil:
		return nil, "", fmt.Errorf("%w, or server.masterkey in %s; %s", err, rel, tryDev)
	}
	return mk, src, nil
}

// newMasterKey is nmauth.NewMasterKey with every insecure key allowed
// under --dev (dev), and a weak one, long enough but not random, under
// --allow-weak-master-key (weakOK); the library logs a warning for
// either.
func newMasterKey(key string, dev, weakOK bool, log *slog.Logger) (*nmauth.MasterKey, error) {
	mk, err := nmauth.NewMasterKey(key, dev, log)
	if weakOK && errors.Is(err, nmauth.ErrWeakMasterKey) {
		return nmauth.NewMasterKey(key, true, log)
	}
	return mk, err
}

// masterKeyFromFile returns the master key of the file rel under dir when
// MASTER_KEY is not set and the file sets one, else a nil key.
func masterKeyFromFile(getenv func(string) string, dir, rel string, dev, weakOK bool, log *slog.Logger) (*nmauth.MasterKey, error) {
	if getenv(envMasterKey) != "" {
		return nil, nil
	}
	key, err := readMasterKeyFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil || key == "" {
		return nil, err
	}
	return newMasterKey(key, dev, weakOK, log.With("source", rel))
}

// validateEnvName keeps NMAUTH_ENV a plain file name so that it cannot
// point outside config/environments/.
func validateEnvName(env string) error {
	if len(env) > maxEnvNameLen {
		return fmt.Errorf("%s is longer than %d characters", envEnvironment, maxEnvNameLen)
	}
	for _, r := range env {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
		if !ok {
			return fmt.Errorf("%s %q may hold only letters, digits, '-' and '_'", envEnvironment, env)
		}
	}
	return nil
}

// readMasterKeyFile returns server.masterkey from the YAML file at path,
// or "" if the file does not exist or sets no key.
func readMasterKeyFile(path string) (string, error) {
	data, err := readSmallFile(path, maxConfigFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading master key from %s: %w", path, err)
	}
	key, err := masterKeyFromYAML(data)
	if err != nil {
		return "", fmt.Errorf("reading master key from %s: %w", path, err)
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
