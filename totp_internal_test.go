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
	sealed, err := r.SealTOTP(rand.Reader, "alice", secret)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, secret) {
		t.Fatal("sealed blob holds the secret")
	}
	if got, err := r.OpenTOTP("alice", sealed); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("open: %q, %v", got, err)
	}
	if _, err := r.OpenTOTP("bob", sealed); err == nil {
		t.Fatal("secret sealed for alice opened for bob")
	}
	flipped := bytes.Clone(sealed)
	flipped[len(flipped)-1] ^= 1
	if _, err := r.OpenTOTP("alice", flipped); err == nil {
		t.Fatal("tampered blob opened")
	}
	rotated := testRing(t, 2, 1)
	if got, err := rotated.OpenTOTP("alice", sealed); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("open after rotation: %v", err)
	}
	if _, err := testRing(t, 3).OpenTOTP("alice", sealed); err == nil {
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
	sig := r.Signer().EnrollmentSignature("alice", url, 7, now.Add(10*time.Minute))
	if !r.CheckEnrollment("alice", url, sig, 7, now) {
		t.Fatal("own signature refused")
	}
	for name, ok := range map[string]bool{
		"other user":       r.CheckEnrollment("bob", url, sig, 7, now),
		"other url":        r.CheckEnrollment("alice", url+"X", sig, 7, now),
		"other generation": r.CheckEnrollment("alice", url, sig, 8, now),
		"expired":          r.CheckEnrollment("alice", url, sig, 7, now.Add(10*time.Minute)),
		"garbage":          r.CheckEnrollment("alice", url, "x.y.z", 7, now),
		"extended":         r.CheckEnrollment("alice", url, "9"+sig, 7, now),
		"foreign key":      testRing(t, 2).CheckEnrollment("alice", url, sig, 7, now),
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
