// Package rootkey derives nmauth's subkeys from a root secret, each for
// one purpose, and does the symmetric work of two of them: the sealing of
// TOTP secrets at rest with AES-256-GCM, and the MAC of enrollment
// signatures. Both name the key they were made under by its id, so that a
// secret or a signature made under an older root secret is still opened
// or checked. The [Ring] holds the keys of every configured root secret
// and finds a key by its id; its first key signs and seals, and keys the
// digests of machine secrets.
package rootkey

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/hkdf"
)

// Subkey derives n bytes for one purpose from a root secret with HKDF.
func Subkey(secret []byte, purpose string, n int) []byte {
	out := make([]byte, n)
	if _, err := io.ReadFull(hkdf.New(sha256.New, secret, nil, []byte(purpose)), out); err != nil {
		panic("nmauth: hkdf: " + err.Error()) // unreachable for n <= 255*32
	}
	return out
}

// NewSealer returns the AES-256-GCM cipher that seals under key.
func NewSealer(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// sealedVersion prefixes every sealed TOTP secret.
const sealedVersion = 1

// Seal encrypts a TOTP secret with seal, the sealer of the key whose id
// (hex of 8 bytes) is kid, with the username as additional data so a
// sealed secret cannot be moved to another user. Layout: version | key id
// (8) | nonce | ciphertext.
func Seal(seal cipher.AEAD, kid string, rnd io.Reader, username string, secret []byte) ([]byte, error) {
	id, _ := hex.DecodeString(kid)
	nonce := make([]byte, seal.NonceSize())
	if _, err := io.ReadFull(rnd, nonce); err != nil {
		return nil, fmt.Errorf("nmauth: seal nonce: %w", err)
	}
	out := append([]byte{sealedVersion}, id...)
	out = append(out, nonce...)
	return seal.Seal(out, nonce, secret, []byte(username)), nil
}

// SealedKeyID is the key id a sealed TOTP secret names, "" if malformed.
func SealedKeyID(sealed []byte) string {
	if len(sealed) < 9 {
		return ""
	}
	return hex.EncodeToString(sealed[1:9])
}

// Open decrypts a secret sealed by Seal under the key of the id it names,
// whose sealer byID returns (nil for a key it does not hold).
func Open(username string, sealed []byte, byID func(kid string) cipher.AEAD) ([]byte, error) {
	if len(sealed) < 1+8 || sealed[0] != sealedVersion {
		return nil, errors.New("nmauth: malformed sealed totp secret")
	}
	seal := byID(hex.EncodeToString(sealed[1:9]))
	if seal == nil {
		return nil, errors.New("nmauth: sealed totp secret uses an unknown key")
	}
	rest := sealed[9:]
	ns := seal.NonceSize()
	if len(rest) < ns {
		return nil, errors.New("nmauth: malformed sealed totp secret")
	}
	secret, err := seal.Open(nil, rest[:ns], rest[ns:], []byte(username))
	if err != nil {
		return nil, fmt.Errorf("nmauth: open totp secret: %w", err)
	}
	return secret, nil
}

// EnrollmentSignature binds an otpauth URL to one user at one generation
// of the account until an expiry, under key, whose id is kid, so that a
// revoking change (a new password, a disable) kills a pending enrollment.
// Its form is "<expiry unix>.<key id>.<base64url HMAC-SHA256>".
func EnrollmentSignature(key []byte, kid, username, url string, gen uint64, expires time.Time) string {
	exp := expires.Unix()
	return fmt.Sprintf("%d.%s.%s", exp, kid, base64.RawURLEncoding.EncodeToString(enrollmentMAC(key, username, url, gen, exp)))
}

func enrollmentMAC(key []byte, username, url string, gen uint64, exp int64) []byte {
	m := hmac.New(sha256.New, key)
	// Length-prefixed fields so no two inputs share an encoding.
	fmt.Fprintf(m, "nmauth-enrollment-v2|%d:%s|%d:%s|%d|%d", len(username), username, len(url), url, gen, exp)
	return m.Sum(nil)
}

// CheckEnrollment verifies a signature made by EnrollmentSignature for
// the account's current generation, under the key of the id it names,
// which byID returns (nil for a key it does not hold).
func CheckEnrollment(username, url, sig string, gen uint64, now time.Time, byID func(kid string) []byte) bool {
	parts := strings.SplitN(sig, ".", 3)
	if len(parts) != 3 {
		return false
	}
	exp, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil || strconv.FormatInt(exp, 10) != parts[0] {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return false
	}
	key := byID(parts[1])
	if key == nil || !now.Before(time.Unix(exp, 0)) {
		return false
	}
	return hmac.Equal(got, enrollmentMAC(key, username, url, gen, exp))
}
