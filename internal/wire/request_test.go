package wire

import (
	"testing"

	"github.com/nmauth/nmauth/internal/jsonbody"
)

// FuzzHostLoginBody: a host login body that ParseFlat takes, the full
// decoder takes too, with the same fields; and the body netclient sends
// is one ParseFlat takes.
func FuzzHostLoginBody(f *testing.F) {
	for _, s := range []string{
		`{"id":"h1","macaddress":"aa:bb:cc:dd:ee:ff","password":"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"}`,
		" {\t\"id\" : \"h1\" ,\r\n\"password\":\"p\"}\n",
		`{}`, `{"id":"h1","id":"h2"}`, `{"ID":"h1","password":"p"}`, `{"id":"h\u00e9","password":"p"}`,
		`{"id":"h1","password":"p\"q"}`, `{"id":"h1","password":"p"}{}`, `{"id":"h1","password":"p",}`,
		`{"id":"h1","password":null}`, `{"id":"hé","password":"p"}`, "{\"id\":\"h\xff\",\"password\":\"p\"}",
		`{"id":"h1","passwrd":"p"}`, `{"id":"h1","extra":"x"}`, `[]`, `"x"`, `{"id":1}`, "{\"id\":\"a\x01\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var flat HostLoginBody
		if !flat.ParseFlat(body) {
			if flat != (HostLoginBody{}) {
				t.Fatalf("ParseFlat refused %q and changed the request: %+v", body, flat)
			}
			return
		}
		var full HostLoginBody
		if err := jsonbody.Decode(body, &full); err != nil {
			t.Fatalf("ParseFlat took %q, which the decoder refuses: %v", body, err)
		}
		if flat != full {
			t.Fatalf("body %q: ParseFlat %+v, decoder %+v", body, flat, full)
		}
	})
}

// TestNetclientBodyIsFlat: netclient's host login body takes the fast
// path (a test that ParseFlat is not simply always false).
func TestNetclientBodyIsFlat(t *testing.T) {
	var req HostLoginBody
	body := `{"id":"3f2504e0-4f89-11d3-9a0c-0305e82c3301","password":"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567","macaddress":"aa:bb:cc:dd:ee:ff"}`
	if !req.ParseFlat([]byte(body)) || req.ID != "3f2504e0-4f89-11d3-9a0c-0305e82c3301" || req.MACAddress != "aa:bb:cc:dd:ee:ff" ||
		req.Password != "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567" {
		t.Errorf("ParseFlat = %+v", req)
	}
}

// TestBodyFields: the bodies' JSON names are the ones the routes document,
// so that the decoder, which takes only those keys, takes the clients'.
func TestBodyFields(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want []string
	}{
		{&HostLoginBody{}, hostLoginKeys},
		{&UserLoginBody{}, []string{"username", "password"}},
		{&TOTPBody{}, []string{"otp_auth_url", "otp_auth_url_signature", "totp", "current_totp"}},
		{&AccessTokenBody{}, []string{"name", "user_name", "expires_at", "read_only", "networks"}},
	} {
		got := jsonbody.Fields(tc.v)
		if len(got) != len(tc.want) {
			t.Errorf("%T: fields %q, want %q", tc.v, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%T: fields %q, want %q", tc.v, got, tc.want)
				break
			}
		}
	}
}
