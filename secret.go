package nmauth

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxSecretFileSize bounds a root secret file.
const maxSecretFileSize = 4096

// ParseSecrets reads root secrets for [Config.Secrets] from text, such as
// an environment variable: one secret, or a comma-separated list of them,
// the first of which signs and seals while all of them verify and open.
// Each secret is hex, or else standard or URL-safe base64 with or without
// padding, and must decode to at least 32 bytes; spaces and
// newlines around it are ignored. A string of hex digits is always read
// as hex, so that a short or mistyped hex secret never passes for a long
// base64 one. An error names the position of a bad secret, never its
// content.
//
// A secret must also look drawn at random: one whose text has too few
// distinct characters for its length (64 hex zeros, a repeated pattern),
// whose bytes repeat too much, that decodes to printable text, or whose
// base64 is nine tenths letters of one case (words that happen to read as
// base64) is refused with advice on making a good one, such as
// "openssl rand -base64 32". A secret of random bytes fails these tests
// with a probability below 10^-9. [Config.Secrets] takes bytes as they
// are: these tests are for secrets a person may have typed.
func ParseSecrets(s string) ([][]byte, error) {
	secrets, err := parseSecrets(s)
	if err != nil {
		return nil, fmt.Errorf("nmauth: %w", err)
	}
	return secrets, nil
}

// parseSecrets is [ParseSecrets] with errors that do not name the
// package, for callers that say where the text came from.
func parseSecrets(s string) ([][]byte, error) {
	fields := strings.Split(s, ",")
	secrets := make([][]byte, 0, len(fields))
	for i, field := range fields {
		b, err := decodeSecret(field)
		if err != nil {
			if len(fields) == 1 {
				return nil, fmt.Errorf("root secret: %w", err)
			}
			return nil, fmt.Errorf("root secret %d of the list: %w", i+1, err)
		}
		secrets = append(secrets, b)
	}
	return secrets, nil
}

// decodeSecret reads one secret of [ParseSecrets].
func decodeSecret(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty")
	}
	var b []byte
	var err error
	alphabet := 16
	if strings.Trim(s, "0123456789abcdefABCDEF") == "" {
		if b, err = hex.DecodeString(s); err != nil {
			return nil, errors.New("malformed hex")
		}
	} else if b, err = decodeBase64(s); err != nil {
		return nil, errors.New("neither hex nor base64")
	} else {
		alphabet = 64
	}
	if len(b) < minSecretLen {
		return nil, fmt.Errorf("%d bytes, need at least %d", len(b), minSecretLen)
	}
	if why := secretWeakness(s, alphabet, b); why != "" {
		return nil, fmt.Errorf("does not look random: %s; %s", why, secretAdvice)
	}
	return b, nil
}

func decodeBase64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

// LoadSecretFile reads root secrets from the file at path, in the forms
// [ParseSecrets] reads. It refuses a file that is not a regular file,
// that users other than its owner may read or write (its mode must be
// 0600 or stricter: the secret is worth as much as every account it
// protects), or that is larger than 4096 bytes. A missing file is an
// error matching [fs.ErrNotExist]. Keep the file outside the database it
// protects, and back it up apart from it.
func LoadSecretFile(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("nmauth: root secret file %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("nmauth: root secret file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("nmauth: root secret file %s has mode %04o, open to other users; run chmod 600 %s", path, perm, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSecretFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("nmauth: root secret file %s: %w", path, err)
	}
	if len(data) > maxSecretFileSize {
		return nil, fmt.Errorf("nmauth: root secret file %s is larger than %d bytes", path, maxSecretFileSize)
	}
	secrets, err := parseSecrets(string(data))
	if err != nil {
		return nil, fmt.Errorf("nmauth: %s: %w", path, err)
	}
	return secrets, nil
}

// LoadOrCreateSecretFile returns the root secrets in the file at path as
// [LoadSecretFile] does, first making the file, with mode 0600 and one new
// random secret of 32 bytes in hex, if it does not exist; created reports
// that it did. The new file appears whole or not at all, and of processes
// that start at once only one secret wins: all of them return it.
//
// Make a secret file only where no data protected by an earlier secret
// exists: a new secret makes every token and sealed TOTP secret of the
// old one unreadable. For a database that already holds accounts, use
// [LoadSecretFile], which never makes one.
func LoadOrCreateSecretFile(path string) (secrets [][]byte, created bool, err error) {
	secrets, err = LoadSecretFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return secrets, false, err
	}
	switch err := createSecretFile(path); {
	case err == nil:
		created = true
	case !errors.Is(err, fs.ErrExist):
		return nil, false, err
	}
	// Read back what is on disk: another process may have won the race
	// to create it.
	secrets, err = LoadSecretFile(path)
	return secrets, created, err
}

// createSecretFile writes a new secret to a temporary file and links it
// into place, so that no process ever reads a half-written secret and of
// two processes starting at once only one secret wins. It returns an
// error matching fs.ErrExist if the file appeared meanwhile.
func createSecretFile(path string) error {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*") // mode 0600
	if err != nil {
		return fmt.Errorf("nmauth: creating root secret file: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(hex.EncodeToString(secret) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("nmauth: writing root secret file: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		return fmt.Errorf("nmauth: creating root secret file %s: %w", path, err)
	}
	return syncDir(dir)
}

// syncDir makes a new directory entry durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("nmauth: syncing %s: %w", dir, err)
	}
	return nil
}
