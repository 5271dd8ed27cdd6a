package nmauth

import (
	"bytes"
	"crypto/rand"
	"testing"
	"time"

	"github.com/nmauth/nmauth/internal/attempt"
)

func testRing(t *testing.T, secrets ...byte) *keyRing {
	t.Helper()
	var s [][]byte
	for _, b := range secrets {
		s = append(s, bytes.Repeat([]byte{b}, 32))
	}
	r, err := newKeyRing(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSealTOTP(t *testing.T) {
	r := testRing(t, 1)
	secret := []byte("0123456789abcdefghij")
	sealed, err := r.sealTOTP(rand.Reader, "alice", secret)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, secret) {
		t.Fatal("sealed blob holds the secret")
	}
	if got, err := r.openTOTP("alice", sealed); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("open: %q, %v", got, err)
	}
	if _, err := r.openTOTP("bob", sealed); err == nil {
		t.Fatal("secret sealed for alice opened for bob")
	}
	flipped := bytes.Clone(sealed)
	flipped[len(flipped)-1] ^= 1
	if _, err := r.openTOTP("alice", flipped); err == nil {
		t.Fatal("tampered blob opened")
	}
	rotated := testRing(t, 2, 1)
	if got, err := rotated.openTOTP("alice", sealed); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("open after rotation: %v", err)
	}
	if _, err := testRing(t, 3).openTOTP("alice", sealed); err == nil {
		t.Fatal("opened under a foreign key")
	}
}

func TestKeyRingRules(t *testing.T) {
	if _, err := newKeyRing(nil); err == nil {
		t.Fatal("empty ring accepted")
	}
	if _, err := newKeyRing([][]byte{make([]byte, 31)}); err == nil {
		t.Fatal("31-byte secret accepted")
	}
	s := bytes.Repeat([]byte{1}, 32)
	if _, err := newKeyRing([][]byte{s, s}); err == nil {
		t.Fatal("repeated secret accepted")
	}
}

var fixedNow = time.Unix(1_700_000_000, 0)

func TestEnrollmentSignature(t *testing.T) {
	r := testRing(t, 1)
	now := time.Unix(1_700_000_000, 0)
	url := "otpauth://totp/nmauth:alice?secret=ABC"
	sig := r.signer().enrollmentSignature("alice", url, 7, now.Add(10*time.Minute))
	if !r.checkEnrollment("alice", url, sig, 7, now) {
		t.Fatal("own signature refused")
	}
	for name, ok := range map[string]bool{
		"other user":       r.checkEnrollment("bob", url, sig, 7, now),
		"other url":        r.checkEnrollment("alice", url+"X", sig, 7, now),
		"other generation": r.checkEnrollment("alice", url, sig, 8, now),
		"expired":          r.checkEnrollment("alice", url, sig, 7, now.Add(10*time.Minute)),
		"garbage":          r.checkEnrollment("alice", url, "x.y.z", 7, now),
		"extended":         r.checkEnrollment("alice", url, "9"+sig, 7, now),
		"foreign key":      testRing(t, 2).checkEnrollment("alice", url, sig, 7, now),
	} {
		if ok {
			t.Errorf("%s: signature accepted", name)
		}
	}
}

func TestTOTPDelayBound(t *testing.T) {
	for n := range 5 {
		if attempt.TOTPDelay(n) != 0 {
			t.Fatalf("delay after %d failures", n)
		}
	}
	if attempt.TOTPDelay(5) != time.Second || attempt.TOTPDelay(6) != 2*time.Second || attempt.TOTPDelay(1000) != 15*time.Minute {
		t.Fatalf("delays %s %s %s", attempt.TOTPDelay(5), attempt.TOTPDelay(6), attempt.TOTPDelay(1000))
	}
}

func TestIssuedAtJSON(t *testing.T) {
	at := issuedAt{time.Unix(1772366460, 123456789)}
	b, _ := at.MarshalJSON()
	if string(b) != "1772366460.123456789" {
		t.Fatalf("iat written as %s", b)
	}
	var back issuedAt
	if err := back.UnmarshalJSON(b); err != nil || !back.Equal(at.Time) {
		t.Fatalf("iat read back as %v, %v", back, err)
	}
	for in, want := range map[string]time.Time{"1772366460": time.Unix(1772366460, 0), "1772366460.5": time.Unix(1772366460, 5e8)} {
		var got issuedAt
		if err := got.UnmarshalJSON([]byte(in)); err != nil || !got.Equal(want) {
			t.Errorf("%s read as %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"-1", "1.1234567891", "1e9", `"1"`, "1.-5", "", "1.x"} {
		var got issuedAt
		if err := got.UnmarshalJSON([]byte(bad)); err == nil {
			t.Errorf("%q accepted as %v", bad, got)
		}
	}
}
