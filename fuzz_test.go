package nmauth

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nmauth/nmauth/internal/wire"
)

func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer a.b.c", "Basic x", "Bearer", "Bearer  x y", "BEARER \x00", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		tok, err := BearerToken(http.Header{"Authorization": {v}})
		if err != nil {
			return
		}
		if tok == "" || strings.ContainsAny(tok, " \t\r\n") || !strings.HasSuffix(v, tok) {
			t.Fatalf("BearerToken(%q) = %q", v, tok)
		}
	})
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{"username":"a","password":"b"}`, `{}`, `null`, `{"id":1}`, `{} {}`, `[`, `"x"`, `{"password":"a","Password":"b"}`, `{"totp":"1","totp":"2"}`, `{"x":{"x":1},"X":[]}`, `{"USERNAME":"a"}`, `{"pass":"x","usename":"y"}`, `{"id":""}`} {
		f.Add(s, "application/json")
	}
	f.Add(`{}`, "text/plain")
	f.Fuzz(func(t *testing.T, body, ct string) {
		for _, v := range []any{&wire.UserLoginBody{}, &wire.HostLoginBody{}, &wire.TOTPBody{}} {
			req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
			req.Header.Set("Content-Type", ct)
			err := decodeJSON(httptest.NewRecorder(), req, v)
			if err == nil {
				continue
			}
			if status, _ := errorStatus(err); status < 400 || status >= 500 {
				t.Fatalf("decode error %v maps to %d", err, status)
			}
		}
	})
}

func FuzzEnrollmentSignature(f *testing.F) {
	r, err := newKeyRing([][]byte{[]byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		f.Fatal(err)
	}
	f.Add("alice", "otpauth://totp/x", "1.2.3")
	f.Fuzz(func(t *testing.T, user, url, sig string) {
		if r.CheckEnrollment(user, url, sig, 0, fixedNow) {
			t.Fatalf("forged signature %q accepted", sig)
		}
	})
}
