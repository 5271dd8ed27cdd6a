package enroll

import (
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/nmauth/nmauth/internal/jsonbody"
)

// clientError reports whether err is a client's mistake, which nmauth
// answers 400: a RequestError, or a body jsonbody refuses for its keys.
func clientError(err error) bool {
	var req RequestError
	var field *jsonbody.FieldError
	return errors.As(err, &req) || errors.As(err, &field) ||
		errors.Is(err, jsonbody.ErrMalformed) || errors.Is(err, jsonbody.ErrDuplicateKey)
}

// FuzzNetmakerToken: a register route's token either gives a key or is a
// client's mistake that says it is malformed.
func FuzzNetmakerToken(f *testing.F) {
	for _, s := range []string{"eyJzZXJ2ZXIiOiJhIiwidmFsdWUiOiJiIn0=", "", "bm9wZQ==", "not*base64", "eyJ2YWx1ZSI6MX0=", "bnVsbA=="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, token string) {
		key, err := NetmakerTokenKey(token)
		if err != nil {
			if !clientError(err) || !strings.Contains(err.Error(), "malformed") {
				t.Fatalf("NetmakerTokenKey(%q): %v is no client's mistake", token, err)
			}
			return
		}
		if key == "" {
			t.Fatalf("NetmakerTokenKey(%q) gave an empty key", token)
		}
	})
}

// FuzzJoinBody: a joining host's body either gives an id and a password,
// with a MAC address that reads as one and public JSON without any
// secret field, or is a client's mistake.
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
		h, err := ParseJoin(body, pass, netmaker)
		if err != nil {
			if !clientError(err) {
				t.Fatalf("ParseJoin(%q): %v is no client's mistake", body, err)
			}
			return
		}
		if h.ID == "" || h.Password == "" || !netmaker && h.Key == "" {
			t.Fatalf("ParseJoin(%q) = %+v without a required field", body, h)
		}
		if _, err := net.ParseMAC(h.MAC); netmaker && h.MAC != "" && err != nil {
			t.Fatalf("ParseJoin(%q) gave MAC %q, which does not parse", body, h.MAC)
		}
		var public map[string]json.RawMessage
		if err := json.Unmarshal(h.Public, &public); err != nil {
			t.Fatalf("public JSON %q: %v", h.Public, err)
		}
		for k := range public {
			for _, f := range secretHostFields {
				if strings.EqualFold(k, f) {
					t.Fatalf("public JSON %s keeps %s", h.Public, k)
				}
			}
		}
	})
}
