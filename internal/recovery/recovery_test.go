package recovery

import (
	"crypto/rand"
	"strings"
	"testing"
)

func TestRecoveryCodes(t *testing.T) {
	codes, hashes, err := New(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if len(codes) != 10 || len(hashes) != 10 {
		t.Fatalf("%d codes, %d hashes", len(codes), len(hashes))
	}
	seen := map[string]bool{}
	for _, c := range codes {
		if len(c) != 19 || !IsCode(c) || seen[c] {
			t.Fatalf("bad or repeated code %q", c)
		}
		seen[c] = true
	}
	typed := strings.ToUpper(strings.ReplaceAll(codes[3], "-", " "))
	left, ok := Use(hashes, typed)
	if !ok {
		t.Fatal("recovery code typed in upper case with spaces refused")
	}
	if _, ok := Use(left, codes[3]); ok {
		t.Fatal("recovery code accepted twice")
	}
	if len(left) != 9 {
		t.Fatalf("%d codes left, want 9", len(left))
	}
}

func FuzzRecoveryCode(f *testing.F) {
	f.Add("abcd-efgh-ijkm-npqr")
	f.Add("ABCD EFGH")
	f.Fuzz(func(t *testing.T, code string) {
		if IsCode(code) && len(normalize(code)) != chars {
			t.Fatalf("IsCode(%q) with wrong length", code)
		}
		if _, ok := Use([]string{hash("abcd-efgh-ijkm-npqr")}, code); ok != (normalize(code) == "abcdefghijkmnpqr") {
			t.Fatalf("Use(%q) disagrees with normalisation", code)
		}
	})
}
