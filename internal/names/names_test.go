package names

import (
	"strings"
	"testing"
)

// TestPrepare: each preparation's stored form of a name, "" where it
// refuses the name.
func TestPrepare(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(string) (string, bool)
		in      string
		want    string
	}{
		{"Username", Username, "alice", "alice"},
		{"Username", Username, "Alice", "alice"},
		{"Username", Username, "ＡＬＩＣＥ", "alice"},
		{"Username", Username, "", ""},
		{"Username", Username, "two words", ""},
		{"Username", Username, strings.Repeat("a", 64), strings.Repeat("a", 64)},
		{"Username", Username, strings.Repeat("a", 65), ""},
		{"HostID", HostID, "host-1", "host-1"},
		{"HostID", HostID, "Host", "Host"},
		{"HostID", HostID, "0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9", "0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9"},
		{"HostID", HostID, "0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8FG", "0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8FG"},
		{"HostID", HostID, "", ""},
		{"HostID", HostID, "a b", ""},
		{"HostID", HostID, "a\x00", ""},
		{"HostID", HostID, "\xff", ""},
		{"HostID", HostID, strings.Repeat("h", 128), strings.Repeat("h", 128)},
		{"HostID", HostID, strings.Repeat("h", 129), ""},
		{"MAC", MAC, "AA:BB:CC:DD:EE:FF", "aa:bb:cc:dd:ee:ff"},
		{"MAC", MAC, "aa-bb-cc-dd-ee-ff", "aa:bb:cc:dd:ee:ff"},
		{"MAC", MAC, "not a mac", ""},
	} {
		got, ok := tc.prepare(tc.in)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s(%q) = %q, %v; want %q", tc.name, tc.in, got, ok, tc.want)
		}
	}
	if got, ok := MAC(""); got != "" || !ok {
		t.Errorf(`MAC("") = %q, %v; want "", true`, got, ok)
	}
}

func TestSafe(t *testing.T) {
	if Safe("alice") != "alice" || Safe(strings.Repeat("a", 65)) != "(invalid)" || Safe("\xff") != "(invalid)" {
		t.Fatal("Safe passes a name it should bound, or bounds one it should pass")
	}
}

// FuzzNames checks that a prepared username or host id is its own
// preparation, so that one name has one stored form.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"alice", "ＡＬＩＣＥ", "0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9", "a b", "\u212a", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if p, ok := Username(s); ok {
			if q, ok := Username(p); !ok || q != p {
				t.Fatalf("Username(%q) = %q, whose own preparation is %q, %v", s, p, q, ok)
			}
		}
		if p, ok := HostID(s); ok {
			if q, ok := HostID(p); !ok || q != p {
				t.Fatalf("HostID(%q) = %q, whose own preparation is %q, %v", s, p, q, ok)
			}
		}
	})
}

func TestNetwork(t *testing.T) {
	for _, ok := range []string{"net1", "Netmaker-Net_2", strings.Repeat("n", 128)} {
		if !Network(ok) {
			t.Errorf("Network(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", "a b", "a\tb", "\x00", strings.Repeat("n", 129), "\xff"} {
		if Network(bad) {
			t.Errorf("Network(%q) = true", bad)
		}
	}
}
