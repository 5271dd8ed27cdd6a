package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestLoadOrCreateSecretFile(t *testing.T) {
	t.Run("made once, 0600, then read back", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "app.secret")
		first, created, err := loadOrCreateSecretFile(path)
		if err != nil || !created || len(first) != 1 || len(first[0]) != 32 {
			t.Fatalf("first load: %d secrets, created %v, %v; want one new secret of 32 bytes", len(first), created, err)
		}
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("secret file: %v, %v; want mode 0600", fi, err)
		}
		again, err := loadSecretFile(path)
		if err != nil || !bytes.Equal(first[0], again[0]) {
			t.Errorf("loadSecretFile gave another secret or %v", err)
		}
	})
	t.Run("a missing file is not made by loadSecretFile", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "none.secret")
		if _, err := loadSecretFile(path); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("loadSecretFile of a missing file: %v, want fs.ErrNotExist", err)
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("the file was made: %v", err)
		}
	})
	t.Run("processes starting at once agree", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "nmauth.db.secret")
		const n = 8
		got := make([][][]byte, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i], _, errs[i] = loadOrCreateSecretFile(path)
			}()
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil || len(got[i]) != 1 || !bytes.Equal(got[i][0], got[0][0]) {
				t.Fatalf("reader %d: %x, %v; want the same secret as reader 0", i, got[i], errs[i])
			}
		}
		if leftovers, _ := filepath.Glob(path + ".tmp-*"); len(leftovers) != 0 {
			t.Errorf("temporary files left: %v", leftovers)
		}
	})
	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			content string
			mode    os.FileMode
			want    string
		}{
			{"group-readable", strings.Repeat("ab", 32), 0o640, "chmod 600"},
			{"world-readable", strings.Repeat("ab", 32), 0o604, "chmod 600"},
			{"too short", strings.Repeat("ab", 16), 0o600, "need at least 32"},
			{"garbage", "not a secret at all, not even close", 0o600, "neither hex nor base64"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "x.secret")
				if err := os.WriteFile(path, []byte(tc.content), tc.mode); err != nil {
					t.Fatal(err)
				}
				os.Chmod(path, tc.mode)
				_, _, err := loadOrCreateSecretFile(path)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want one saying %q", err, tc.want)
				}
				if strings.Contains(err.Error(), tc.content) {
					t.Errorf("the error shows the file's content: %v", err)
				}
			})
		}
	})
}

// TestSecretFileStrength checks that a secret file holds a secret that
// looks random: one of 64 zeros is refused, and every file
// loadOrCreateSecretFile makes is accepted.
func TestSecretFileStrength(t *testing.T) {
	t.Run("in a secret file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "weak.secret")
		if err := os.WriteFile(path, []byte(strings.Repeat("0", 64)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := loadSecretFile(path); err == nil || !strings.Contains(err.Error(), "does not look random") {
			t.Errorf("loadSecretFile of 64 zeros: %v, want a refusal", err)
		}
	})
	t.Run("random", func(t *testing.T) {
		dir := t.TempDir()
		for i := range 200 {
			if _, _, err := loadOrCreateSecretFile(filepath.Join(dir, fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
	})
}
