package nmauth_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nmauth/nmauth"
)

func TestParseSecrets(t *testing.T) {
	// 33 bytes from openssl rand: a root secret must look random.
	raw := mustHex(t, "cef37d464cad6634fa08f080594ccc02eee677190703214167ce9e82c09e179b5a")
	cases := []struct {
		name, in string
		want     []byte // nil for an error
	}{
		{"hex", hex.EncodeToString(raw), raw},
		{"hex upper case with newline", strings.ToUpper(hex.EncodeToString(raw)) + "\n", raw},
		{"base64", base64.StdEncoding.EncodeToString(raw), raw},
		{"base64 without padding", base64.RawStdEncoding.EncodeToString(raw), raw},
		{"base64 URL-safe", base64.URLEncoding.EncodeToString(raw[:30]) + base64.URLEncoding.EncodeToString(urlSafe), append(raw[:30:30], urlSafe...)},
		{"31 bytes of hex", hex.EncodeToString(raw[:31]), nil},
		{"odd-length hex", hex.EncodeToString(raw)[1:], nil},
		{"31 bytes of base64", base64.StdEncoding.EncodeToString(raw[:31]), nil},
		{"neither", strings.Repeat("*", 64), nil},
		{"empty", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			secrets, err := nmauth.ParseSecrets(tc.in)
			var got []byte
			if len(secrets) == 1 {
				got = secrets[0]
			}
			if tc.want == nil {
				if err == nil {
					t.Fatalf("decoded %d bytes, want an error", len(got))
				}
				if len(tc.in) > 8 && strings.Contains(err.Error(), tc.in) {
					t.Errorf("the error shows the secret: %v", err)
				}
				return
			}
			if err != nil || len(secrets) != 1 || !bytes.Equal(got, tc.want) {
				t.Errorf("got %x, %v; want %x", got, err, tc.want)
			}
		})
	}
}

// urlSafe are bytes whose base64 holds '-' and '_'.
var urlSafe = []byte("\xfb\xff\xbf")

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseSecretsList(t *testing.T) {
	a, b := "3617787587822ded3d5a58b54215106ba4d52ff804a28d3df9044bb51a467810", "Qf7G+/wCNzUiWoGoeffRrc4BMOLHjcTkHPS7WMBqlWI="
	got, err := nmauth.ParseSecrets(a + ", " + b)
	if err != nil || len(got) != 2 || got[0][0] != 0x36 || got[1][0] != 0x41 {
		t.Fatalf("nmauth.ParseSecrets(a, b) = %x, %v; want a then b", got, err)
	}
	_, err = nmauth.ParseSecrets(a + ",short")
	if err == nil || !strings.Contains(err.Error(), "secret 2") {
		t.Errorf("a bad second secret: %v, want an error naming secret 2", err)
	}
}

func TestSecretFile(t *testing.T) {
	t.Run("made once, 0600, then read back", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "app.secret")
		first, created, err := nmauth.LoadOrCreateSecretFile(path)
		if err != nil || !created || len(first) != 1 || len(first[0]) != 32 {
			t.Fatalf("first load: %d secrets, created %v, %v; want one new secret of 32 bytes", len(first), created, err)
		}
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("secret file: %v, %v; want mode 0600", fi, err)
		}
		again, err := nmauth.LoadSecretFile(path)
		if err != nil || !bytes.Equal(first[0], again[0]) {
			t.Errorf("LoadSecretFile gave another secret or %v", err)
		}
	})
	t.Run("a missing file is not made by LoadSecretFile", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "none.secret")
		if _, err := nmauth.LoadSecretFile(path); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("LoadSecretFile of a missing file: %v, want fs.ErrNotExist", err)
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
				got[i], _, errs[i] = nmauth.LoadOrCreateSecretFile(path)
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
				_, _, err := nmauth.LoadOrCreateSecretFile(path)
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
