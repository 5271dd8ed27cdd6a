package otpauth

import (
	"bytes"
	"crypto/rand"
	"strings"
	"testing"
	"time"
)

// TestRFC6238Vectors checks the SHA-1 rows of RFC 6238 Appendix B.
func TestRFC6238Vectors(t *testing.T) {
	secret := []byte("12345678901234567890")
	vectors := []struct {
		unix int64
		code string
	}{
		{59, "94287082"},
		{1111111109, "07081804"},
		{1111111111, "14050471"},
		{1234567890, "89005924"},
		{2000000000, "69279037"},
		{20000000000, "65353130"},
	}
	for _, v := range vectors {
		if got := stepCode(secret, v.unix/30, 8); got != v.code {
			t.Errorf("T=%d: code %s, want %s", v.unix, got, v.code)
		}
	}
}

// TestRFC4226Vectors checks the HOTP values of RFC 4226 Appendix D.
func TestRFC4226Vectors(t *testing.T) {
	secret := []byte("12345678901234567890")
	want := []string{"755224", "287082", "359152", "969429", "338314", "254676", "287922", "162583", "399871", "520489"}
	for i, w := range want {
		if got := stepCode(secret, int64(i), 6); got != w {
			t.Errorf("counter %d: %s, want %s", i, got, w)
		}
	}
}

func TestMatchTOTPReplay(t *testing.T) {
	secret := []byte("12345678901234567890")
	now := time.Unix(1111111111, 0)
	step := now.Unix() / 30
	code := stepCode(secret, step, 6)
	if s, _ := Match(secret, code, now, step-1); s != step {
		t.Fatalf("fresh code matched step %d, want %d", s, step)
	}
	if s, replayed := Match(secret, code, now, step); s != -1 || !replayed {
		t.Fatalf("used code: step %d replayed %v", s, replayed)
	}
}

func TestWellFormed(t *testing.T) {
	for code, want := range map[string]bool{"123456": true, "000000": true, "12345": false, "1234567": false, "12345a": false, "": false, "١٢٣٤٥٦": false} {
		if got := WellFormed(code); got != want {
			t.Errorf("WellFormed(%q) = %v, want %v", code, got, want)
		}
	}
}

// TestSecretRoundTrip: the secret of a URL from NewURL reads back for its
// account and issuer only.
func TestSecretRoundTrip(t *testing.T) {
	url, err := NewURL(rand.Reader, "nmauth", "alice")
	if err != nil {
		t.Fatal(err)
	}
	secret, ok := Secret(url, "alice", "nmauth")
	if !ok || len(secret) != SecretSize {
		t.Fatalf("Secret(%q) = %x, %v", url, secret, ok)
	}
	for name, u := range map[string][]string{
		"other account": {url, "bob", "nmauth"},
		"other issuer":  {url, "alice", "other"},
		"8 digits":      {strings.Replace(url, "digits=6", "digits=8", 1), "alice", "nmauth"},
		"60 s period":   {strings.Replace(url, "period=30", "period=60", 1), "alice", "nmauth"},
		"hotp":          {strings.Replace(url, "otpauth://totp/", "otpauth://hotp/", 1), "alice", "nmauth"},
		"not a URL":     {"%", "alice", "nmauth"},
	} {
		if _, ok := Secret(u[0], u[1], u[2]); ok {
			t.Errorf("%s: %q read as an enrollment", name, u[0])
		}
	}
	if _, err := NewURL(bytes.NewReader(make([]byte, SecretSize-1)), "nmauth", "alice"); err == nil {
		t.Error("NewURL with a short random source succeeded")
	}
}

func TestQRDataURL(t *testing.T) {
	got, err := QRDataURL("otpauth://totp/nmauth:alice?secret=ABC")
	if err != nil || !strings.HasPrefix(got, "data:image/png;base64,") {
		t.Fatalf("QRDataURL: %.40q, %v", got, err)
	}
}
