package main

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSecretFile(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	t.Run("made once, 0600, then read back", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "nmauth.db")
		first, err := loadRootSecrets(func(string) string { return "" }, db, true, quiet)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(db + ".secret")
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("secret file: %v, %v; want mode 0600", fi, err)
		}
		again, err := loadRootSecrets(func(string) string { return "" }, db, true, quiet)
		if err != nil || !bytes.Equal(first.secrets[0], again.secrets[0]) || len(first.secrets[0]) != 32 {
			t.Errorf("second load gave another secret or %v", err)
		}
	})
	t.Run("a bad list in the environment names the variable and the secret", func(t *testing.T) {
		list := newRootSecret(t) + ",short"
		env := func(string) string { return list }
		_, err := loadRootSecrets(env, filepath.Join(t.TempDir(), "nmauth.db"), true, quiet)
		if err == nil || !strings.Contains(err.Error(), envSecret) || !strings.Contains(err.Error(), "secret 2") {
			t.Fatalf("error %v, want one naming %s and secret 2", err, envSecret)
		}
	})
	t.Run("never made without create", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "nmauth.db")
		if _, err := loadRootSecrets(func(string) string { return "" }, db, false, quiet); err == nil {
			t.Fatal("loaded a secret that does not exist")
		}
		if _, err := os.Stat(db + ".secret"); err == nil {
			t.Fatal("a secret file was made without create")
		}
	})
}
