package nmauth

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// FuzzNetmakerToken: a register route's token either gives a key or is a
// 400 that says it is malformed.
func FuzzNetmakerToken(f *testing.F) {
	for _, s := range []string{"eyJzZXJ2ZXIiOiJhIiwidmFsdWUiOiJiIn0=", "", "bm9wZQ==", "not*base64", "eyJ2YWx1ZSI6MX0=", "bnVsbA=="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, token string) {
		key, err := netmakerTokenKey(token)
		if err != nil {
			if status, _ := errorStatus(err); status != http.StatusBadRequest {
				t.Fatalf("netmakerTokenKey(%q): %v maps to %d", token, err, status)
			}
			return
		}
		if key == "" {
			t.Fatalf("netmakerTokenKey(%q) gave an empty key", token)
		}
	})
}

// FuzzJoinBody: a joining host's body either gives an id and a password,
// with a MAC address that reads as one and public JSON without any
// secret field, or is a 400.
func FuzzJoinBody(f *testing.F) {
	for _, s := range []string{
		`{"id":"0b7e4c2d-1f3a-4b5c-8d6e-7f8091a2b3c4","hostpass":"AAAA","macaddress":"AkKsEQAC","privatekey":"x"}`,
		`{"id":"h","password":"p","key":"k","macaddress":"02:42:ac:11:00:02"}`,
		`[]`, `null`, `{"id":1}`, `{"macaddress":"AAEC"}`, `{"id":"a","id":"b","hostpass":"p"}`, `{"HostPass":"x"}`, `{"id":"a","hostpass":"b","PrivateKey":"c"}`,
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, netmaker bool) {
		pass := "password"
		if netmaker {
			pass = "hostpass"
		}
		h, err := parseJoinBody(body, pass, netmaker)
		if err != nil {
			if status, _ := errorStatus(err); status != http.StatusBadRequest {
				t.Fatalf("parseJoinBody(%q): %v maps to %d", body, err, status)
			}
			return
		}
		if h.id == "" || h.password == "" || !netmaker && h.key == "" {
			t.Fatalf("parseJoinBody(%q) = %+v without a required field", body, h)
		}
		if _, err := prepareMAC(h.mac); netmaker && err != nil {
			t.Fatalf("parseJoinBody(%q) gave MAC %q, which does not parse", body, h.mac)
		}
		var public map[string]json.RawMessage
		if err := json.Unmarshal(h.public, &public); err != nil {
			t.Fatalf("public JSON %q: %v", h.public, err)
		}
		for k := range public {
			for _, f := range secretHostFields {
				if strings.EqualFold(k, f) {
					t.Fatalf("public JSON %s keeps %s", h.public, k)
				}
			}
		}
	})
}
