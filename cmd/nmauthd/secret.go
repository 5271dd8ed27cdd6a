package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/nmauth/nmauth"
)

const envSecret = "NMAUTH_SECRET"

// maxSecretFileSize bounds the secret file read at startup.
const maxSecretFileSize = 4096

// rootSecrets are the root secrets and where they came from, for the log.
type rootSecrets struct {
	secrets [][]byte
	source  string // "env NMAUTH_SECRET" or the file's path
}

// loadRootSecrets takes the root secrets from NMAUTH_SECRET, or else from
// the file beside a SQLite database. The secret never goes into a
// database: whoever steals the database must not get the key that seals
// its TOTP secrets and signs its tokens.
//
// The file is made only when create is set, which the caller does for
// the server on a database that holds no accounts: an admin command, or a
// database whose secret file is lost, must not get a new secret that
// silently kills every token and TOTP secret.
func loadRootSecrets(getenv func(string) string, db string, create bool, log *slog.Logger) (rootSecrets, error) {
	if v := getenv(envSecret); v != "" {
		secrets, err := parseSecretList(v)
		if err != nil {
			return rootSecrets{}, err
		}
		return rootSecrets{secrets: secrets, source: "env " + envSecret}, nil
	}
	if isPostgresURL(db) {
		return rootSecrets{}, fmt.Errorf("%s is required with PostgreSQL: every replica must share one root secret, "+
			"kept outside the database; set it to 32 or more random bytes in hex, e.g. from openssl rand -hex 32", envSecret)
	}
	path := secretFilePath(db)
	if !create {
		secret, err := readSecretFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return rootSecrets{}, fmt.Errorf("no root secret: %s is not set and %s does not exist; "+
				"restore that file, or set %s to the secret that wrote the database (admin commands and a database "+
				"that holds accounts never get a new one; nmauthd serve makes one for an empty database)", envSecret, path, envSecret)
		}
		return rootSecrets{secrets: [][]byte{secret}, source: path}, err
	}
	secret, created, err := readOrCreateSecretFile(path)
	if err != nil {
		return rootSecrets{}, err
	}
	if created {
		log.Info("created root secret file; keep it with the database and back it up apart from it", "path", path)
	}
	return rootSecrets{secrets: [][]byte{secret}, source: path}, nil
}

// parseSecretList reads a comma-separated list of secrets; the first one
// signs and seals, all of them verify and open. Errors name the position
// of a bad secret, never its content.
func parseSecretList(v string) ([][]byte, error) {
	var secrets [][]byte
	for i, field := range strings.Split(v, ",") {
		s, err := decodeSecret(field)
		if err != nil {
			return nil, fmt.Errorf("%s: secret %d of the list: %w", envSecret, i+1, err)
		}
		secrets = append(secrets, s)
	}
	return secrets, nil
}

// decodeSecret reads hex, or else standard or URL-safe base64 with or
// without padding, and requires [nmauth.MinSecretLen] bytes.
func decodeSecret(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty")
	}
	// A string of hex digits is hex: read as base64, a short or mistyped
	// hex secret would pass for a long one.
	var b []byte
	var err error
	if strings.Trim(s, "0123456789abcdefABCDEF") == "" {
		if b, err = hex.DecodeString(s); err != nil {
			return nil, errors.New("malformed hex")
		}
	} else if b, err = decodeBase64(s); err != nil {
		return nil, errors.New("neither hex nor base64")
	}
	if len(b) < nmauth.MinSecretLen {
		return nil, fmt.Errorf("%d bytes, need at least %d", len(b), nmauth.MinSecretLen)
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

func secretFilePath(dbPath string) string { return dbPath + ".secret" }

// readOrCreateSecretFile returns the secret in the file at path, making
// the file with a new random secret if it does not exist.
func readOrCreateSecretFile(path string) (secret []byte, created bool, err error) {
	secret, err = readSecretFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return secret, false, err
	}
	switch err := createSecretFile(path); {
	case err == nil:
		created = true
	case !errors.Is(err, fs.ErrExist):
		return nil, false, err
	}
	// Read back what is on disk: another process may have won the race
	// to create it.
	secret, err = readSecretFile(path)
	return secret, created, err
}

// readSecretFile refuses a file that others may read or write: the
// secret is worth as much as every account in the database.
func readSecretFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("root secret file %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("root secret file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("root secret file %s has mode %04o, open to other users; run chmod 600 %s", path, perm, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSecretFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("root secret file %s: %w", path, err)
	}
	if len(data) > maxSecretFileSize {
		return nil, fmt.Errorf("root secret file %s is larger than %d bytes", path, maxSecretFileSize)
	}
	secret, err := decodeSecret(string(data))
	if err != nil {
		return nil, fmt.Errorf("root secret file %s: %w", path, err)
	}
	return secret, nil
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
		return fmt.Errorf("creating root secret file: %w", err)
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
		return fmt.Errorf("writing root secret file: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		return fmt.Errorf("creating root secret file %s: %w", path, err)
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
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}
