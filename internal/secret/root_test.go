package secret

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

// TestParseRoot: random secrets in hex and base64 read back as their
// bytes, in a list in order; a short, a patterned or an undecodable one
// is refused by its position, and the error never holds the secret.
func TestParseRoot(t *testing.T) {
	a, b := make([]byte, 32), make([]byte, 48)
	rand.Read(a)
	rand.Read(b)
	got, err := ParseRoot(" "+hex.EncodeToString(a)+" ,\n"+base64.RawURLEncoding.EncodeToString(b), 32)
	if err != nil || len(got) != 2 || !bytes.Equal(got[0], a) || !bytes.Equal(got[1], b) {
		t.Fatalf("ParseRoot = %x, %v", got, err)
	}
	for _, tc := range []struct{ text, want string }{
		{hex.EncodeToString(a[:16]), "16 bytes, need at least 32"},
		{strings.Repeat("ab", 32), "does not look random"},
		{hex.EncodeToString(a) + ",not a secret!", "root secret 2 of the list: neither hex nor base64"},
		{"", "empty"},
	} {
		_, err := ParseRoot(tc.text, 32)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseRoot(%q) = %v; want an error with %q", tc.text, err, tc.want)
		}
		if err != nil && tc.text != "" && strings.Contains(err.Error(), tc.text) {
			t.Errorf("the error of %q holds the secret: %v", tc.text, err)
		}
	}
}
