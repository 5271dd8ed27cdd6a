package nmauth_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/nmauth/nmauth"
)

func TestParseSecrets(t *testing.T) {
	// 33 bytes from openssl rand: a root secret must look random.
	raw := mustHex(t, "cef37d464cad6634fa08f080594ccc02eee677190703214167ce9e82c09e179b5a")
	cases := []struct {
		name, in string
		want     []byte // nil for an error
	}{
		{"hex", hex.EncodeToString(raw), raw},
		{"hex upper case with newline", strings.ToUpper(hex.EncodeToString(raw)) + "\n", raw},
		{"base64", base64.StdEncoding.EncodeToString(raw), raw},
		{"base64 without padding", base64.RawStdEncoding.EncodeToString(raw), raw},
		{"base64 URL-safe", base64.URLEncoding.EncodeToString(raw[:30]) + base64.URLEncoding.EncodeToString(urlSafe), append(raw[:30:30], urlSafe...)},
		{"31 bytes of hex", hex.EncodeToString(raw[:31]), nil},
		{"odd-length hex", hex.EncodeToString(raw)[1:], nil},
		{"31 bytes of base64", base64.StdEncoding.EncodeToString(raw[:31]), nil},
		{"neither", strings.Repeat("*", 64), nil},
		{"empty", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			secrets, err := nmauth.ParseSecrets(tc.in)
			var got []byte
			if len(secrets) == 1 {
				got = secrets[0]
			}
			if tc.want == nil {
				if err == nil {
					t.Fatalf("decoded %d bytes, want an error", len(got))
				}
				if len(tc.in) > 8 && strings.Contains(err.Error(), tc.in) {
					t.Errorf("the error shows the secret: %v", err)
				}
				return
			}
			if err != nil || len(secrets) != 1 || !bytes.Equal(got, tc.want) {
				t.Errorf("got %x, %v; want %x", got, err, tc.want)
			}
		})
	}
}

// urlSafe are bytes whose base64 holds '-' and '_'.
var urlSafe = []byte("\xfb\xff\xbf")

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseSecretsList(t *testing.T) {
	a, b := "3617787587822ded3d5a58b54215106ba4d52ff804a28d3df9044bb51a467810", "Qf7G+/wCNzUiWoGoeffRrc4BMOLHjcTkHPS7WMBqlWI="
	got, err := nmauth.ParseSecrets(a + ", " + b)
	if err != nil || len(got) != 2 || got[0][0] != 0x36 || got[1][0] != 0x41 {
		t.Fatalf("nmauth.ParseSecrets(a, b) = %x, %v; want a then b", got, err)
	}
	_, err = nmauth.ParseSecrets(a + ",short")
	if err == nil || !strings.Contains(err.Error(), "secret 2") {
		t.Errorf("a bad second secret: %v, want an error naming secret 2", err)
	}
}
