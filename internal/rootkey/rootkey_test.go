package rootkey

import (
	"bytes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"
)

// key is one root secret's sealing and enrollment keys, by its id.
type key struct {
	id     string
	seal   cipher.AEAD
	enroll []byte
}

func testKey(t *testing.T, b byte) key {
	t.Helper()
	secret := bytes.Repeat([]byte{b}, 32)
	seal, err := NewSealer(Subkey(secret, "nmauth totp seal", 32))
	if err != nil {
		t.Fatal(err)
	}
	return key{hex.EncodeToString(Subkey(secret, "nmauth key id", 8)), seal, Subkey(secret, "nmauth enrollment signature", 32)}
}

func sealers(keys ...key) func(string) cipher.AEAD {
	return func(id string) cipher.AEAD {
		for _, k := range keys {
			if k.id == id {
				return k.seal
			}
		}
		return nil
	}
}

func enrollKeys(keys ...key) func(string) []byte {
	return func(id string) []byte {
		for _, k := range keys {
			if k.id == id {
				return k.enroll
			}
		}
		return nil
	}
}

// TestSubkeysDiffer: each purpose and each secret has its own subkey,
// the same every time.
func TestSubkeysDiffer(t *testing.T) {
	a, b := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	if !bytes.Equal(Subkey(a, "p", 32), Subkey(a, "p", 32)) {
		t.Fatal("a subkey changed")
	}
	if bytes.Equal(Subkey(a, "p", 32), Subkey(a, "q", 32)) || bytes.Equal(Subkey(a, "p", 32), Subkey(b, "p", 32)) {
		t.Fatal("two purposes or two secrets share a subkey")
	}
	if n := len(Subkey(a, "p", 8)); n != 8 {
		t.Fatalf("%d bytes", n)
	}
}

// TestSealOpens: a sealed secret names its key, opens under it for its
// user only, and not when changed or under a key not held.
func TestSealOpens(t *testing.T) {
	k, other := testKey(t, 1), testKey(t, 2)
	secret := []byte("totp secret bytes")
	sealed, err := Seal(k.seal, k.id, rand.Reader, "alice", secret)
	if err != nil {
		t.Fatal(err)
	}
	if id := SealedKeyID(sealed); id != k.id {
		t.Fatalf("sealed under %q, want %q", id, k.id)
	}
	if got, err := Open("alice", sealed, sealers(other, k)); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if _, err := Open("bob", sealed, sealers(k)); err == nil {
		t.Fatal("opened for another user")
	}
	flipped := bytes.Clone(sealed)
	flipped[len(flipped)-1] ^= 1
	if _, err := Open("alice", flipped, sealers(k)); err == nil {
		t.Fatal("opened a changed secret")
	}
	if _, err := Open("alice", sealed, sealers(other)); err == nil || !strings.Contains(err.Error(), "unknown key") {
		t.Fatalf("under a key not held: %v", err)
	}
	for _, bad := range [][]byte{nil, sealed[:8], append([]byte{2}, sealed[1:]...), sealed[:12]} {
		if _, err := Open("alice", bad, sealers(k)); err == nil {
			t.Fatalf("%x opened", bad)
		}
	}
	if SealedKeyID(sealed[:8]) != "" {
		t.Fatal("a key id in a short sealed secret")
	}
}

// TestEnrollmentSignature: a signature checks for its user, URL and
// generation until it expires, under the key it names.
func TestEnrollmentSignature(t *testing.T) {
	k, other := testKey(t, 1), testKey(t, 2)
	now := time.Unix(1772366460, 0)
	url := "otpauth://totp/nmauth:alice?secret=ABC"
	sig := EnrollmentSignature(k.enroll, k.id, "alice", url, 7, now.Add(10*time.Minute))
	if !CheckEnrollment("alice", url, sig, 7, now, enrollKeys(other, k)) {
		t.Fatal("a good signature refused")
	}
	for name, ok := range map[string]bool{
		"other user":       CheckEnrollment("bob", url, sig, 7, now, enrollKeys(k)),
		"other url":        CheckEnrollment("alice", url+"X", sig, 7, now, enrollKeys(k)),
		"other generation": CheckEnrollment("alice", url, sig, 8, now, enrollKeys(k)),
		"expired":          CheckEnrollment("alice", url, sig, 7, now.Add(10*time.Minute), enrollKeys(k)),
		"garbage":          CheckEnrollment("alice", url, "x.y.z", 7, now, enrollKeys(k)),
		"extended":         CheckEnrollment("alice", url, "9"+sig, 7, now, enrollKeys(k)),
		"padded expiry":    CheckEnrollment("alice", url, "0"+sig, 7, now, enrollKeys(k)),
		"foreign key":      CheckEnrollment("alice", url, sig, 7, now, enrollKeys(other)),
	} {
		if ok {
			t.Errorf("%s: accepted", name)
		}
	}
}
