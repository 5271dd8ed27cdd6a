package nmauth_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/nmauth/nmauth"
)

// TestParseSecretsRefusesWeakSecrets checks that root secrets a person
// might type, long enough but not random, are refused with advice on
// making a good one, and without their content in the error.
func TestParseSecretsRefusesWeakSecrets(t *testing.T) {
	for _, tc := range []struct{ name, in, why string }{
		{"64 hex zeros", strings.Repeat("0", 64), "too few distinct characters"},
		{"hex ab repeated", strings.Repeat("ab", 32), "too few distinct characters"},
		{"deadbeef repeated", strings.Repeat("DEADBEEF", 8), "too few distinct characters"},
		{"base64 of zero bytes", base64.StdEncoding.EncodeToString(make([]byte, 32)), "too few distinct characters"},
		{"every hex digit, repeated", strings.Repeat("0123456789abcdef", 4), "bytes repeat"},
		{"hex of a phrase", hex.EncodeToString([]byte("Kj7#pQ2!zX9@mN4&vB8*wL5^hT3%rY6?")), "printable text"},
		{"base64 of a phrase", base64.StdEncoding.EncodeToString([]byte("My dog Rex was born in 2019, OK?")), "printable text"},
		{"a passphrase that reads as base64", "correcthorsebatterystaplecorrecthorsebattery", "too few distinct characters"},
		{"CamelCase words that read as base64", "CorrectHorseBatteryStapleCorrectHorseBatter", "too few distinct characters"},
		{"words joined by dashes, as URL-safe base64", "correct-horse-battery-staple-and-more-words", "letters of one case"},
		{"the same in capitals", "CORRECT-HORSE-BATTERY-STAPLE-AND-MORE-WORDS", "letters of one case"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secrets, err := nmauth.ParseSecrets(tc.in)
			if err == nil {
				t.Fatalf("accepted: %x", secrets)
			}
			msg := err.Error()
			for _, want := range []string{"does not look random", tc.why, "openssl rand -base64 32"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			if strings.Contains(msg, tc.in[:16]) {
				t.Errorf("the error shows the secret: %q", msg)
			}
		})
	}
	t.Run("second of a list", func(t *testing.T) {
		_, err := nmauth.ParseSecrets(randomHex(t) + "," + strings.Repeat("0", 64))
		if err == nil || !strings.Contains(err.Error(), "root secret 2 of the list: does not look random") {
			t.Errorf("error %v, want one naming secret 2 as not random", err)
		}
	})
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestParseSecretsAcceptsRandomSecrets checks that random secrets of the
// sizes and encodings people make pass the tests (each fails with a
// probability below 10^-9).
func TestParseSecretsAcceptsRandomSecrets(t *testing.T) {
	encodings := map[string]func([]byte) string{
		"hex":                 hex.EncodeToString,
		"HEX":                 func(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) },
		"base64":              base64.StdEncoding.EncodeToString,
		"base64 raw URL-safe": base64.RawURLEncoding.EncodeToString,
	}
	for name, encode := range encodings {
		for _, size := range []int{32, 33, 48, 64, 256} {
			t.Run(fmt.Sprintf("%s of %d bytes", name, size), func(t *testing.T) {
				b := make([]byte, size)
				for range 2000 {
					rand.Read(b)
					if _, err := nmauth.ParseSecrets(encode(b)); err != nil {
						t.Fatalf("%x: %v", b, err)
					}
				}
			})
		}
	}
}
