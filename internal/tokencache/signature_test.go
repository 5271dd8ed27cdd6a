package tokencache

import (
	"crypto/rand"
	"encoding/base64"
	"testing"
)

// TestDecodeSignature: the hit path's decoder of a JWT's signature agrees
// with base64.RawURLEncoding on every signature, and refuses what it
// refuses: a character outside base64url, or another length.
func TestDecodeSignature(t *testing.T) {
	for range 1000 {
		var raw [32]byte
		rand.Read(raw[:])
		s := base64.RawURLEncoding.EncodeToString(raw[:])
		var got [32]byte
		if !DecodeSignature(s, &got) || got != raw {
			t.Fatalf("%s: %x, want %x", s, got, raw)
		}
		if !SameSignature(&got, &raw) {
			t.Fatal("SameSignature refuses equal signatures")
		}
		got[31] ^= 1
		if SameSignature(&got, &raw) {
			t.Fatal("SameSignature accepts different signatures")
		}
		for _, bad := range []string{s[:42], s + "A", s[:20] + "+" + s[21:], s[:42] + "=", s[:5] + "\xff" + s[6:]} {
			_, err := base64.RawURLEncoding.DecodeString(bad)
			if DecodeSignature(bad, &got) || err == nil && len(bad) == 43 {
				t.Fatalf("%q decoded", bad)
			}
		}
	}
}
