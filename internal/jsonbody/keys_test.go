package jsonbody

import (
	"errors"
	"testing"
)

// TestCheckKeys checks what CheckKeys refuses and what it lets through.
func TestCheckKeys(t *testing.T) {
	fields := []string{"username", "password"}
	for _, tc := range []struct {
		body    string
		want    error
		problem Problem
		key     string
		field   string
	}{
		{body: `{"username":"a","password":"b"}`},
		{body: `{"username":"a","client":"x","remember":true,"ip":"192.0.2.1"}`},
		{body: `[{"username":"a","username":"b"}]`},
		{body: `"x"`},
		{body: `{"x":{"password":1,"password":2}}`},
		{body: `{"username":"a","username":"b"}`, want: ErrDuplicateKey},
		{body: `{"USERNAME":"a"}`, problem: Case, key: "USERNAME", field: "username"},
		{body: `{"uſername":"a"}`, problem: Case, key: "uſername", field: "username"},
		{body: `{"pass":"a"}`, problem: Misspelled, key: "pass", field: "password"},
		{body: `{"user_name":"a"}`, problem: Misspelled, key: "user_name", field: "username"},
	} {
		err := CheckKeys([]byte(tc.body), fields)
		var field *FieldError
		switch {
		case tc.key != "":
			if !errors.As(err, &field) || *field != (FieldError{Key: tc.key, Field: tc.field, Problem: tc.problem}) {
				t.Errorf("CheckKeys(%s) = %v, want %s for %s", tc.body, err, tc.key, tc.field)
			}
		case !errors.Is(err, tc.want):
			t.Errorf("CheckKeys(%s) = %v, want %v", tc.body, err, tc.want)
		}
	}
}

// TestMisspelledField checks the examples misspelledField's comment gives,
// and that a short field takes no near key.
func TestMisspelledField(t *testing.T) {
	fields := []string{"id", "macaddress", "password", "username"}
	for key, want := range map[string]string{
		"user_name": "username", "macAddress": "macaddress", "mac-address": "macaddress",
		"pass": "password", "user": "username", "usename": "username", "pasword": "password",
		"passwrod": "password", "passwd": "password",
		"ip": "", "i": "", "pa": "", "name": "", "client": "", "hostpass": "", "": "", "___": "",
	} {
		if got := misspelledField(key, fields); got != want {
			t.Errorf("misspelledField(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "ab", 2}, {"password", "password", 0},
		{"pasword", "password", 1}, {"passwrod", "password", 1}, {"usename", "username", 1},
		{"ab", "ba", 1}, {"ca", "abc", 3}, {"héllo", "hello", 1}, {"kitten", "sitting", 3},
	} {
		if d := editDistance(tc.a, tc.b); d != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
	}
}

// TestRequire checks that Require names the first empty field.
func TestRequire(t *testing.T) {
	if err := Require("id", "h1", "password", "p"); err != nil {
		t.Errorf("Require with every field = %v", err)
	}
	var field *FieldError
	if err := Require("id", "", "password", ""); !errors.As(err, &field) || field.Field != "id" || field.Problem != Missing {
		t.Errorf("Require = %v, want id missing", err)
	}
}

// TestMessage checks the text a client sees: a key only when it is short
// and printable.
func TestMessage(t *testing.T) {
	for _, tc := range []struct {
		e    FieldError
		want string
	}{
		{FieldError{Key: "USERNAME", Field: "username", Problem: Case},
			`"USERNAME" in the JSON body must be written "username": field names match exactly, case included`},
		{FieldError{Key: "pass", Field: "password", Problem: Misspelled},
			`unknown field "pass" in the JSON body; did you mean "password"?`},
		{FieldError{Field: "password", Problem: Missing}, `"password" is missing or empty in the JSON body; it is required`},
		{FieldError{Key: "pass\x00", Field: "password", Problem: Misspelled}, `unknown field a key in the JSON body; did you mean "password"?`},
		{FieldError{Key: "pass\u2028", Field: "password", Problem: Misspelled}, `unknown field a key in the JSON body; did you mean "password"?`},
		{FieldError{Key: "pass\xff", Field: "password", Problem: Misspelled}, `unknown field a key in the JSON body; did you mean "password"?`},
	} {
		if got := tc.e.Message(); got != tc.want {
			t.Errorf("%+v: message %q, want %q", tc.e, got, tc.want)
		}
		if got := tc.e.Error(); got != "nmauth: "+tc.want {
			t.Errorf("%+v: error %q", tc.e, got)
		}
	}
}

func TestFields(t *testing.T) {
	type body struct {
		ID      string `json:"id"`
		Mac     string `json:"macaddress,omitempty"`
		Plain   string
		Skipped string `json:"-"`
		hidden  string
	}
	got := Fields(&body{})
	want := []string{"id", "macaddress", "Plain"}
	if len(got) != len(want) {
		t.Fatalf("Fields = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Fields = %q, want %q", got, want)
		}
	}
	if f := Fields(new(int)); f != nil {
		t.Errorf("Fields of an int = %q", f)
	}
}
