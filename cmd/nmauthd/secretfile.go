package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nmauth/nmauth"
)

// maxSecretFileSize bounds a root secret file.
const maxSecretFileSize = 4096

// loadSecretFile reads root secrets from the file at path, in the forms
// [nmauth.ParseSecrets] reads. It refuses a file that is not a regular file,
// that users other than its owner may read or write (its mode must be
// 0600 or stricter: the secret is worth as much as every account it
// protects), or that is larger than 4096 bytes. A missing file is an
// error matching [fs.ErrNotExist]. Keep the file outside the database it
// protects, and back it up apart from it.
func loadSecretFile(path string) ([][]byte, error) {
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
	secrets, err := nmauth.ParseSecrets(string(data))
	if err != nil {
		return nil, fmt.Errorf("root secret file %s: %w", path, err)
	}
	return secrets, nil
}

// loadOrCreateSecretFile returns the root secrets in the file at path as
// [loadSecretFile] does, first making the file, with mode 0600 and one new
// random secret of 32 bytes in hex, if it does not exist; created reports
// that it did. The new file appears whole or not at all, and of processes
// that start at once only one secret wins: all of them return it.
//
// Make a secret file only where no data protected by an earlier secret
// exists: a new secret makes every token and sealed TOTP secret of the
// old one unreadable. For a database that already holds accounts, use
// [loadSecretFile], which never makes one.
func loadOrCreateSecretFile(path string) (secrets [][]byte, created bool, err error) {
	secrets, err = loadSecretFile(path)
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
	secrets, err = loadSecretFile(path)
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
