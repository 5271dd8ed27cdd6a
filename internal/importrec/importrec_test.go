package importrec

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestTOTPSecret: base32 in any case, spaced or padded, of 80 to 512
// bits decodes; anything else is refused; "" is no secret.
func TestTOTPSecret(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"", "", true},
		{"JBSWY3DPEHPK3PXP", "Hello!\xde\xad\xbe\xef", true},
		{"jbsw y3dp ehpk 3pxp", "Hello!\xde\xad\xbe\xef", true},
		{"GEZDGNBVGY3TQOJQ", "1234567890", true},
		{"GEZDGNBVGY3TQOJQGE======", "12345678901", true},
		{"GEZDGNBVGY3TQOI", "", false}, // 72 bits
		{strings.Repeat("A", 104), strings.Repeat("\x00", 65), false},
		{"not base32!", "", false},
	} {
		got, ok := TOTPSecret(tc.in)
		if ok != tc.ok || ok && string(got) != tc.want {
			t.Errorf("TOTPSecret(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestConflicts: names that prepare to one are grouped in the order
// given; a name prepare refuses is in no group.
func TestConflicts(t *testing.T) {
	prepare := func(s string) (string, error) {
		if s == "" {
			return "", errors.New("empty")
		}
		return strings.ToLower(s), nil
	}
	for _, tc := range []struct {
		names []string
		want  [][]int
	}{
		{nil, [][]int{}},
		{[]string{"a", "b"}, [][]int{}},
		{[]string{"b", "A", "", "a", "B", "", "c", "b"}, [][]int{{0, 4, 7}, {1, 3}}},
	} {
		if got := Conflicts(tc.names, prepare); !reflect.DeepEqual(got, tc.want) && (len(got) != 0 || len(tc.want) != 0) {
			t.Errorf("Conflicts(%q) = %v, want %v", tc.names, got, tc.want)
		}
	}
}
