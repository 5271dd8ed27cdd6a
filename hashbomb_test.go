package nmauth_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/nmauth/nmauth"
)

// hashBomb is a hash whose parameters ask a login for far more than the
// house argon2id costs (issue 38): minutes of work, gigabytes, or every
// core. named is the parameter an import's refusal must name.
type hashBomb struct {
	format, hash, named string
}

// hashBombs are within the bounds of the parser before issue 38, so that
// each was once computed: a login against one took seconds to minutes.
func hashBombs() []hashBomb {
	b64 := func(n int, fill byte) string {
		return base64.RawStdEncoding.EncodeToString(bytes.Repeat([]byte{fill}, n))
	}
	salt, key, key64 := b64(16, 's'), b64(32, 'k'), b64(64, 'k')
	bcryptTail := strings.Repeat("a", 22) + strings.Repeat("b", 31)
	return []hashBomb{
		{"argon2id memory", "$argon2id$v=19$m=1048576,t=2,p=1$" + salt + "$" + key, "m=1048576"},
		{"argon2id lanes", "$argon2id$v=19$m=65536,t=1,p=16$" + salt + "$" + key, "p=16"},
		{"argon2id passes", "$argon2id$v=19$m=65536,t=16,p=1$" + salt + "$" + key, "m*t"},
		{"argon2i memory and lanes", "$argon2i$v=19$m=1048576,t=16,p=16$" + salt + "$" + key, "m=1048576"},
		{"argon2i passes", "$argon2i$v=19$m=32768,t=16,p=1$" + salt + "$" + key, "m*t"},
		{"bcrypt cost 16", "$2b$16$" + bcryptTail, "cost 16"},
		{"scrypt memory", "$scrypt$ln=23,r=1,p=16$" + salt + "$" + key, "ln=23,r=1"},
		{"scrypt lanes", "$scrypt$ln=16,r=8,p=16$" + salt + "$" + key, "p=16"},
		{"pbkdf2-sha256 iterations", "$pbkdf2-sha256$i=10000000,l=32$" + salt + "$" + key, "i=10000000"},
		{"pbkdf2-sha256 key blocks", "$pbkdf2-sha256$i=1500000,l=64$" + salt + "$" + key64, "i=1500000"},
		{"django pbkdf2 iterations", "pbkdf2_sha256$10000000$somesalt$" + key, "iterations=10000000"},
	}
}

// TestImportRefusesHashBombs: an import refuses a hash that would cost a
// login more than the bounds, with an error naming the parameter, and
// stores nothing, for users and hosts.
func TestImportRefusesHashBombs(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, b := range hashBombs() {
		t.Run(b.format, func(t *testing.T) {
			_, err := f.auth.Admin().ImportUser(ctx, nmauth.ImportedUser{Name: "bombed", PasswordHash: b.hash})
			if !errors.Is(err, nmauth.ErrInvalidImport) || !strings.Contains(err.Error(), b.named) {
				t.Errorf("ImportUser: %v; want ErrInvalidImport naming %q", err, b.named)
			}
			if _, err := f.store.GetUser(ctx, "bombed"); !errors.Is(err, nmauth.ErrNotFound) {
				t.Errorf("the user was stored (%v)", err)
			}
			_, err = f.auth.Admin().ImportHost(ctx, nmauth.ImportedHost{ID: "bombed-host", PasswordHash: b.hash}, nil)
			if !errors.Is(err, nmauth.ErrInvalidImport) || !strings.Contains(err.Error(), b.named) {
				t.Errorf("ImportHost: %v; want ErrInvalidImport naming %q", err, b.named)
			}
			if _, err := f.store.GetHost(ctx, "bombed-host"); !errors.Is(err, nmauth.ErrNotFound) {
				t.Errorf("the host was stored (%v)", err)
			}
		})
	}
}

// TestStoredHashBombIsABrokenRecord: a hash beyond the bounds found in
// the store is a broken record: the login answers 500 with one error line
// naming the account and the parameter, and nothing is computed. Were it
// computed, as before issue 38, the login would run for seconds to
// minutes (the largest for hours on this machine) and answer 401, the
// verdict of a wrong password; a 500 is only given before any work.
func TestStoredHashBombIsABrokenRecord(t *testing.T) {
	bombs := append(hashBombs(), hashBomb{
		// A machine secret's digest has no cost parameter: one HMAC
		// whatever is stored. A digest padded out is refused as unreadable.
		"machine digest", "$nmauth-hmac-sha256$k=0123456789abcdef$" + strings.Repeat("A", 1<<20), "machine secret digest",
	})
	for _, b := range bombs {
		t.Run(b.format, func(t *testing.T) {
			for _, kind := range []string{"user", "host"} {
				var logs bytes.Buffer
				store := nmauth.NewMemoryStore()
				f := faultFixture(t, store, &logs)
				var r reply
				switch kind {
				case "user":
					f.addUser("alice", "correct horse battery")
					if err := store.UpdateUser(context.Background(), "alice", func(u *nmauth.User) error {
						u.PasswordHash = b.hash
						return nil
					}); err != nil {
						t.Fatal(err)
					}
					r = f.loginUser("alice", "correct horse battery")
				case "host":
					f.addHost("host-1", "", "host-password-1")
					if err := store.UpdateHost(context.Background(), "host-1", func(h *nmauth.Host) error {
						h.PasswordHash = b.hash
						return nil
					}); err != nil {
						t.Fatal(err)
					}
					r = hostLogin(f, "host-password-1")
				}
				wantError(t, r, http.StatusInternalServerError)
				lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
				name := map[string]string{"user": "alice", "host": "host-1"}[kind]
				if len(lines) != 1 || !strings.Contains(lines[0], "level=ERROR") || !strings.Contains(lines[0], name) ||
					!strings.Contains(lines[0], b.named) {
					t.Errorf("%s: log %q: want one error line naming %s and %q", kind, lines, name, b.named)
				}
				if tail := b.hash[strings.LastIndex(b.hash, "$")+1:]; strings.Contains(logs.String(), tail[:16]) {
					t.Errorf("%s: the log shows the stored hash", kind)
				}
			}
		})
	}
}
