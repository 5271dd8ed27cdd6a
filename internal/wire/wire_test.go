package wire

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestPlainJSON: a plain string is one encoding/json writes as its own
// bytes in quotes; anything beyond printable ASCII is not plain.
func TestPlainJSON(t *testing.T) {
	for s, want := range map[string]bool{
		"": true, "abc": true, "eyJhbGciOiJIUzI1NiJ9.c2ln-_": true, "a<b": false, "a>b": false, "a&b": false,
		`a"b`: false, `a\b`: false, "é": false, "\x7f": false, "\n": false, "\u2028": false,
	} {
		if got := PlainJSON(s); got != want {
			t.Errorf("PlainJSON(%q) = %v, want %v", s, got, want)
		}
		if enc, _ := json.Marshal(s); want && string(enc) != `"`+s+`"` {
			t.Errorf("PlainJSON(%q), but encoding/json writes %s", s, enc)
		}
	}
}

// FuzzHostLogin: the host login answer written by hand is the bytes
// encoding/json writes for its envelope, in both profiles.
func FuzzHostLogin(f *testing.F) {
	for _, seed := range [][2]string{
		{"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJoMSJ9.c2ln-_", "3f2504e0-4f89-11d3-9a0c-0305e82c3301"},
		{"a<b", "h&1"}, {`a"b`, "h\\1"}, {"é", "\u2028"}, {"", ""},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, token, id string) {
		for _, netmaker := range []bool{false, true} {
			got, ok := HostLogin(netmaker, id, token)
			if ok != (PlainJSON(token) && PlainJSON(id)) {
				t.Fatalf("HostLogin(%v, %q, %q) reports %v", netmaker, id, token, ok)
			}
			if !ok {
				continue
			}
			var payload any = struct {
				AuthToken string `json:"authToken"`
				ID        string `json:"id"`
			}{token, id}
			if netmaker {
				payload = NetmakerLogin{ID: id, AuthToken: token}
			}
			var want bytes.Buffer
			json.NewEncoder(&want).Encode(Envelope(netmaker, 200, "host authenticated", payload))
			if !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("netmaker %v: written %s, encoded %s", netmaker, got, want.Bytes())
			}
		}
	})
}

// TestEnvelope: the spec's envelope leaves out a nil payload, Netmaker's
// writes it as null.
func TestEnvelope(t *testing.T) {
	for netmaker, want := range map[bool]string{
		false: `{"code":400,"message":"bad"}`,
		true:  `{"Code":400,"Message":"bad","Response":null}`,
	} {
		if got, _ := json.Marshal(Envelope(netmaker, 400, "bad", nil)); string(got) != want {
			t.Errorf("netmaker %v: %s, want %s", netmaker, got, want)
		}
	}
}

// TestHostID: the spec profile takes any id as it is; Netmaker's takes
// only a UUID, in any case, and gives its lower-case form.
func TestHostID(t *testing.T) {
	for _, tc := range []struct {
		netmaker bool
		id, want string
		ok       bool
	}{
		{false, "host-1", "host-1", true},
		{false, "3F2504E0-4F89-11D3-9A0C-0305E82C3301", "3F2504E0-4F89-11D3-9A0C-0305E82C3301", true},
		{true, "3F2504E0-4F89-11d3-9a0c-0305E82C3301", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", true},
		{true, "host-1", "", false},
		{true, "3f2504e04f8911d39a0c0305e82c3301", "", false},
	} {
		if got, ok := HostID(tc.netmaker, tc.id); got != tc.want || ok != tc.ok {
			t.Errorf("HostID(%v, %q) = %q, %v; want %q, %v", tc.netmaker, tc.id, got, ok, tc.want, tc.ok)
		}
	}
}
