package secret

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

// netclientSecret makes a host password as netclient does
// (RandomString(32) in Netmaker's logic/util.go): 32 random bytes written
// in standard base32, cut to 32 characters.
func netclientSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base32.StdEncoding.EncodeToString(b)[:32]
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// TestMachineSecretsQualify: the secrets that programs draw at random
// qualify, every time.
func TestMachineSecretsQualify(t *testing.T) {
	makers := map[string]func() string{
		"netclient's RandomString(32)":        netclientSecret,
		"crypto/rand.Text (nmauthd host add)": rand.Text,
		"32 hex digits":                       func() string { return hex.EncodeToString(randomBytes(16)) },
		"32 upper-case hex digits":            func() string { return strings.ToUpper(hex.EncodeToString(randomBytes(16))) },
		"base64 of 25 bytes, padded":          func() string { return base64.StdEncoding.EncodeToString(randomBytes(25)) },
		"base64url of 32 bytes":               func() string { return base64.RawURLEncoding.EncodeToString(randomBytes(32)) },
		"lower-case base32 of 20 bytes":       func() string { return strings.ToLower(base32.StdEncoding.EncodeToString(randomBytes(20))) },
	}
	for name, make := range makers {
		for range 2000 {
			if s := make(); !IsMachine(s) {
				t.Fatalf("%s: %q does not qualify", name, s)
			}
		}
	}
}

// TestMachineSecretsRefused: what a person would choose, and random text
// too short for 128 bits, keeps argon2id.
func TestMachineSecretsRefused(t *testing.T) {
	for _, s := range []string{
		"",
		"host-password-1",
		"correct horse battery staple and more words",
		"Tr0ub4dor&3-Tr0ub4dor&3-Tr0ub4dor&3",
		strings.Repeat("A", 40),
		strings.Repeat("ab", 20),
		strings.Repeat("0123456789", 4),
		"k3j4k3j4k3j4k3j4k3j4k3j4k3j4k3j4k3j4k3j4",
		strings.Repeat("Zm9vYmFy", 4),
		netclientSecret()[:25],                                     // 125 bits
		hex.EncodeToString(randomBytes(16))[:31],                   // 124 bits
		base64.RawStdEncoding.EncodeToString(randomBytes(16))[:21], // 126 bits
		netclientSecret() + " ",
		netclientSecret() + "!",
		strings.Repeat(netclientSecret(), 40), // longer than a password may be
	} {
		if IsMachine(s) {
			t.Errorf("%q qualifies as a machine secret", s)
		}
	}
}

// TestMachineSecretEntropy: what a person types in a row or out of words
// keeps argon2id however long it is, while 10,000 secrets of netclient's
// and of crypto/rand.Text all qualify.
func TestMachineSecretEntropy(t *testing.T) {
	for _, s := range []string{
		"abcdefghijklmnopqrstuvwxyz",
		"ABCDEFGHIJKLMNOPQRSTUVWXYZ",
		"zyxwvutsrqponmlkjihgfedcba",
		"qwertyuiopasdfghjklzxcvbnm",
		"QWERTYUIOPASDFGHJKLZXCVBNM",
		"mnbvcxzlkjhgfdsapoiuytrewq",
		"correcthorsebatterystaple1",
		"CorrectHorseBatteryStaple1",
		"welcomepasswordadminsunshine",
		"abcdefghijklmnopqrstuvwxyz0123456789",
		"1234567890qwertyuiopasdfghjklzxcvbnm",
	} {
		if IsMachine(s) {
			t.Errorf("%q qualifies as a machine secret (estimated %.0f bits)", s, bits(s, 5))
		}
	}
	for name, make := range map[string]func() string{
		"netclient's RandomString(32)": netclientSecret,
		"crypto/rand.Text":             rand.Text,
	} {
		for range 10000 {
			if s := make(); !IsMachine(s) {
				t.Fatalf("%s: %q does not qualify (estimated %.0f bits)", name, s, bits(s, 5))
			}
		}
	}
	// A random secret with a short run or a word in it keeps its bits.
	for _, s := range []string{"ABCDEFGQ7XK2MZ4PLW3HTN6VRJ", "PASSWORD7XK2MZ4PLW3HTN6VRJ"[:26]} {
		if got := bits(s, 5); got < 128 {
			t.Errorf("bits(%q) = %.1f, want the 130 of random text", s, got)
		}
	}
}

// BenchmarkIsMachine is the classification every host login makes
// of its secret, for netclient's kind of secret.
func BenchmarkIsMachine(b *testing.B) {
	s := netclientSecret()
	for b.Loop() {
		if !IsMachine(s) {
			b.Fatal("netclient's secret does not qualify")
		}
	}
}
