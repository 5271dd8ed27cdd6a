package hashfmt

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

// TestHashThreads: a hash's check holds a slot of the hashing gate for
// each thread it runs at once: argon2's lanes, which
// golang.org/x/crypto/argon2 runs each on a goroutine of its own; one for
// scrypt, whose lanes run one after another, for bcrypt and for PBKDF2.
func TestHashThreads(t *testing.T) {
	b64 := func(n int, fill byte) string {
		return base64.RawStdEncoding.EncodeToString(bytes.Repeat([]byte{fill}, n))
	}
	salt, key := b64(16, 's'), b64(32, 'k')
	for _, tc := range []struct {
		name, hash string
		threads    int
	}{
		{"house argon2id", "$argon2id$v=19$m=19456,t=2,p=1$" + salt + "$" + key, 1},
		{"argon2id of four lanes", "$argon2id$v=19$m=65536,t=1,p=4$" + salt + "$" + key, 4},
		{"argon2i of three lanes", "$argon2i$v=19$m=32768,t=2,p=3$" + salt + "$" + key, 3},
		{"scrypt of four lanes", "$scrypt$ln=15,r=8,p=4$" + salt + "$" + key, 1},
		{"bcrypt", "$2b$10$" + strings.Repeat("a", 22) + strings.Repeat("b", 31), 1},
		{"pbkdf2-sha256", "$pbkdf2-sha256$i=600000,l=32$" + salt + "$" + key, 1},
		{"django pbkdf2", "pbkdf2_sha256$870000$somesalt$" + key, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := Parse(Identify(tc.hash), tc.hash)
			if err != nil {
				t.Fatal(err)
			}
			if got := h.Threads(); got != tc.threads {
				t.Errorf("Threads = %d; want %d", got, tc.threads)
			}
		})
	}
}

func TestMachineDigest(t *testing.T) {
	mac := make([]byte, 32)
	stored := EncodeMachineDigest("0123456789abcdef", mac)
	if Identify(stored) != MachineDigest || MachineDigestKeyID(stored) != "0123456789abcdef" {
		t.Fatalf("%q is not identified as a digest under its key", stored)
	}
	id, got, err := ParseMachineDigest(stored)
	if err != nil || id != "0123456789abcdef" || len(got) != 32 {
		t.Fatalf("ParseMachineDigest = %q, %x, %v", id, got, err)
	}
	for _, bad := range []string{MachineDigestPrefix + "0123$" + stored[len(stored)-43:], stored + "A", stored[:len(stored)-1]} {
		if _, _, err := ParseMachineDigest(bad); err == nil {
			t.Errorf("ParseMachineDigest(%q) succeeded", bad)
		}
	}
}
