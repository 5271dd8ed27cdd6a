package jsonbody

import "testing"

// hostLogin is a body of string fields, as Flat's caller decodes it.
type hostLogin struct {
	ID         string `json:"id"`
	MACAddress string `json:"macaddress"`
	Password   string `json:"password"`
}

var hostLoginKeys = []string{"id", "macaddress", "password"}

// TestFlat checks the bodies Flat takes and some it leaves to Decode.
func TestFlat(t *testing.T) {
	for _, tc := range []struct {
		body string
		ok   bool
		want [3]string
	}{
		{`{"id":"h1","password":"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567","macaddress":"aa:bb:cc:dd:ee:ff"}`, true,
			[3]string{"h1", "aa:bb:cc:dd:ee:ff", "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"}},
		{" {\t\"id\" : \"h1\" ,\r\n\"password\":\"p\"}\n", true, [3]string{"h1", "", "p"}},
		{`{}`, true, [3]string{}},
		{`{"id":"hé","password":"p"}`, true, [3]string{"hé", "", "p"}},
		{`{"id":"h1","id":"h2"}`, false, [3]string{}},
		{`{"ID":"h1"}`, false, [3]string{}},
		{`{"id":"h\u00e9"}`, false, [3]string{}},
		{`{"id":"h1","password":null}`, false, [3]string{}},
		{`{"id":"h1",}`, false, [3]string{}},
		{`{"id":"h1"}{}`, false, [3]string{}},
		{"{\"id\":\"h\xff\"}", false, [3]string{}},
		{"{\"id\":\"a\x01\"}", false, [3]string{}},
		{`{"extra":"x"}`, false, [3]string{}},
		{`[]`, false, [3]string{}},
		{``, false, [3]string{}},
	} {
		var v [3]string
		ok := Flat([]byte(tc.body), hostLoginKeys, v[:])
		if ok != tc.ok || ok && v != tc.want {
			t.Errorf("Flat(%q) = %v %q, want %v %q", tc.body, ok, v, tc.ok, tc.want)
		}
	}
	if Flat([]byte(`{}`), hostLoginKeys, make([]string, 2)) {
		t.Error("Flat took vals shorter than keys")
	}
}

// FuzzFlat: a body that Flat takes, Decode takes too, with the same
// values.
func FuzzFlat(f *testing.F) {
	for _, s := range []string{
		`{"id":"h1","macaddress":"aa:bb:cc:dd:ee:ff","password":"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"}`,
		" {\t\"id\" : \"h1\" ,\r\n\"password\":\"p\"}\n", `{}`, `{"id":"h1","id":"h2"}`, `{"ID":"h1"}`,
		`{"id":"h\u00e9"}`, `{"id":"hé"}`, `{"id":"h1"}{}`, `{"passwrd":"p"}`, `{"id":1}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var v [3]string
		if !Flat(body, hostLoginKeys, v[:]) {
			return
		}
		var full hostLogin
		if err := Decode(body, &full); err != nil {
			t.Fatalf("Flat took %q, which Decode refuses: %v", body, err)
		}
		if got := (hostLogin{v[0], v[1], v[2]}); got != full {
			t.Fatalf("body %q: Flat %+v, Decode %+v", body, got, full)
		}
	})
}
