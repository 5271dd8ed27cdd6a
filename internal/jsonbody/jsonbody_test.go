package jsonbody

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRead checks the content types Read takes and the size it allows.
func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name, ct, body string
		want           error
	}{
		{"json", "application/json", `{}`, nil},
		{"with a charset", "application/json; charset=utf-8", `{}`, nil},
		{"in another case", "Application/JSON", `{}`, nil},
		{"text", "text/plain", `{}`, ErrContentType},
		{"none", "", `{}`, ErrContentType},
		{"a suffix", "application/json-patch+json", `{}`, ErrContentType},
		{"not a media type", "application/json;;", `{}`, ErrContentType},
		{"at the limit", "application/json", strings.Repeat(" ", 16), nil},
		{"over the limit", "application/json", strings.Repeat(" ", 17), ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body))
			if tc.ct != "" {
				r.Header.Set("Content-Type", tc.ct)
			}
			body, err := Read(httptest.NewRecorder(), r, 16)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Read = %q, %v; want %v", body, err, tc.want)
			}
			if err == nil && string(body) != tc.body {
				t.Errorf("Read = %q, want %q", body, tc.body)
			}
		})
	}
}

type login struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// TestDecode checks that Decode takes one JSON value of the right type
// and refuses anything after it, a wrong type and a key given twice.
func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		body string
		want error
	}{
		{`{"username":"a","password":"b"}`, nil},
		{` {"username":"a"} ` + "\n", nil},
		{`null`, nil},
		{`{"username":"a"} {}`, ErrMalformed},
		{`{"username":"a"}x`, ErrMalformed},
		{`{"username":1}`, ErrMalformed},
		{`[]`, ErrMalformed},
		{`{`, ErrMalformed},
		{``, ErrMalformed},
		{`{"username":"a","username":"b"}`, ErrDuplicateKey},
	} {
		var v login
		if err := Decode([]byte(tc.body), &v); !errors.Is(err, tc.want) {
			t.Errorf("Decode(%q) = %v, want %v", tc.body, err, tc.want)
		}
	}
	var v login
	if err := Decode([]byte(`{"username":"a","password":"b"}`), &v); err != nil || v != (login{"a", "b"}) {
		t.Errorf("Decode = %+v, %v", v, err)
	}
	var field *FieldError
	if err := Decode([]byte(`{"Username":"a"}`), &v); !errors.As(err, &field) || field.Problem != Case || field.Field != "username" {
		t.Errorf("a field in another case: %v", err)
	}
}
