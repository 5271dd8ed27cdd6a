package bearer

import (
	"net/http"
	"strings"
	"testing"
)

// TestCredential checks the headers Credential takes and those it refuses.
func TestCredential(t *testing.T) {
	long := strings.Repeat("a", MaxLen)
	for _, tc := range []struct {
		name string
		h    http.Header
		want string
		ok   bool
	}{
		{"bearer", http.Header{"Authorization": {"Bearer abc.def-_~"}}, "abc.def-_~", true},
		{"scheme in any case", http.Header{"Authorization": {"bEARER abc"}}, "abc", true},
		{"spaces after the scheme", http.Header{"Authorization": {"Bearer    abc"}}, "abc", true},
		{"the longest", http.Header{"Authorization": {"Bearer " + long}}, long, true},
		{"too long", http.Header{"Authorization": {"Bearer " + long + "a"}}, "", false},
		{"none", http.Header{}, "", false},
		{"two headers", http.Header{"Authorization": {"Bearer a", "Bearer b"}}, "", false},
		{"another scheme", http.Header{"Authorization": {"Basic YTpi"}}, "", false},
		{"no credential", http.Header{"Authorization": {"Bearer "}}, "", false},
		{"only spaces", http.Header{"Authorization": {"Bearer    "}}, "", false},
		{"scheme alone", http.Header{"Authorization": {"Bearer"}}, "", false},
		{"tab after the scheme", http.Header{"Authorization": {"Bearer\tabc"}}, "", false},
		{"two credentials", http.Header{"Authorization": {"Bearer a b"}}, "", false},
		{"a trailing space", http.Header{"Authorization": {"Bearer a "}}, "", false},
		{"not ASCII", http.Header{"Authorization": {"Bearer abcé"}}, "", false},
		{"a control character", http.Header{"Authorization": {"Bearer ab\x7f"}}, "", false},
	} {
		got, ok := Credential(tc.h)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: Credential = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// visibleByByte is the rule visibleASCII reads eight bytes at a time.
func visibleByByte(s string) bool {
	for i := range len(s) {
		if s[i] < '!' || s[i] > '~' {
			return false
		}
	}
	return true
}

// TestVisibleASCII checks visibleASCII against the rule byte by byte:
// every byte value at every place of strings of 0 to 72 bytes, so that
// each of its loops and the tail meet each.
func TestVisibleASCII(t *testing.T) {
	if !visibleASCII("") {
		t.Error("visibleASCII of the empty string is false")
	}
	for n := 1; n <= 72; n++ {
		s := []byte(strings.Repeat("a", n))
		for at := range n {
			for b := range 256 {
				s[at] = byte(b)
				if got, want := visibleASCII(string(s)), visibleByByte(string(s)); got != want {
					t.Fatalf("visibleASCII(%q) = %v, want %v", s, got, want)
				}
			}
			s[at] = 'a'
		}
	}
}

// FuzzVisibleASCII: visibleASCII agrees with the rule byte by byte.
func FuzzVisibleASCII(f *testing.F) {
	for _, s := range []string{"", "a", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJoMSJ9.c2ln-_", strings.Repeat("~", 40) + "\x7f", " " + strings.Repeat("!", 33)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := visibleASCII(s), visibleByByte(s); got != want {
			t.Fatalf("visibleASCII(%q) = %v, want %v", s, got, want)
		}
	})
}
