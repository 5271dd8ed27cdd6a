package rootkey

import (
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/nmauth/nmauth/internal/hashfmt"
)

// MinSecretLen is the least number of bytes a root secret may have.
const MinSecretLen = 32

// Key holds the subkeys derived from one root secret.
type Key struct {
	// ID names the key in what it signs and seals: 8 bytes of an HKDF
	// subkey, in hex.
	ID string
	// Check is the value a Store keeps to recognise this secret later;
	// hex of its own HKDF subkey.
	Check string
	// JWT holds the signing keys of the tokens, one for each audience
	// the ring was made with, in their order.
	JWT    [][]byte
	enroll []byte
	seal   cipher.AEAD
	// machine keys the digests of machine secrets; machineHMACs holds
	// HMAC states under it, ready to reuse.
	machine      []byte
	machineHMACs sync.Pool
	// Header is the encoded JOSE header of the tokens this key signs:
	// {"alg":"HS256","kid":"<id>","typ":"JWT"}, in base64url.
	Header string
	// jwtHMACs holds HMAC states under JWT's keys, ready to reuse.
	jwtHMACs []sync.Pool
}

// derive returns the subkeys of secret, with a JWT key for each audience.
func derive(secret []byte, audiences []string) (*Key, error) {
	k := &Key{
		ID:       hex.EncodeToString(Subkey(secret, "nmauth key id", 8)),
		Check:    hex.EncodeToString(Subkey(secret, "nmauth key check", 32)),
		JWT:      make([][]byte, len(audiences)),
		enroll:   Subkey(secret, "nmauth enrollment signature", 32),
		machine:  Subkey(secret, "nmauth machine secret", 32),
		jwtHMACs: make([]sync.Pool, len(audiences)),
	}
	for i, aud := range audiences {
		k.JWT[i] = Subkey(secret, "nmauth jwt "+aud, 32)
	}
	k.Header = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","kid":"` + k.ID + `","typ":"JWT"}`))
	var err error
	if k.seal, err = NewSealer(Subkey(secret, "nmauth totp seal", 32)); err != nil {
		return nil, err
	}
	return k, nil
}

// SignJWT returns the HS256 signature under the JWT key of audience i of
// a token whose signing input is signing.
func (k *Key) SignJWT(i int, signing []byte) (sig [sha256.Size]byte) {
	m, _ := k.jwtHMACs[i].Get().(hash.Hash)
	if m == nil {
		m = hmac.New(sha256.New, k.JWT[i])
	}
	m.Write(signing)
	m.Sum(sig[:0])
	m.Reset()
	k.jwtHMACs[i].Put(m)
	return sig
}

// MachineMAC is the HMAC-SHA256 of a host's secret under k's machine
// subkey. The host's name is part of the message, length first, so that
// two hosts with the same secret store different digests. The HMAC states
// are kept between calls, so that a login does not allocate and key a new
// one.
func (k *Key) MachineMAC(name, secret string) (mac [sha256.Size]byte) {
	m, _ := k.machineHMACs.Get().(hash.Hash)
	if m == nil {
		m = hmac.New(sha256.New, k.machine)
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(name)))
	m.Write(n[:])
	io.WriteString(m, name)
	io.WriteString(m, secret)
	m.Sum(mac[:0])
	m.Reset()
	k.machineHMACs.Put(m)
	return mac
}

// EnrollmentSignature binds an otpauth URL to one user at one generation
// of the account until an expiry (see [CheckEnrollment]).
func (k *Key) EnrollmentSignature(username, url string, gen uint64, expires time.Time) string {
	return EnrollmentSignature(k.enroll, k.ID, username, url, gen, expires)
}

// Ring holds the subkeys of every configured root secret. The first signs
// and seals; all verify and open, found by their id.
type Ring struct {
	Keys []*Key
}

// NewRing derives the keys of secrets, each of at least MinSecretLen
// bytes and none listed twice, with a JWT key for each audience.
func NewRing(secrets [][]byte, audiences []string) (*Ring, error) {
	if len(secrets) == 0 {
		return nil, errors.New("nmauth: no root secret configured")
	}
	r := &Ring{}
	seen := map[string]bool{}
	for i, s := range secrets {
		if len(s) < MinSecretLen {
			return nil, fmt.Errorf("nmauth: root secret %d is %d bytes, need at least %d", i, len(s), MinSecretLen)
		}
		k, err := derive(s, audiences)
		if err != nil {
			return nil, err
		}
		if seen[k.ID] {
			return nil, fmt.Errorf("nmauth: root secret %d is listed twice", i)
		}
		seen[k.ID] = true
		r.Keys = append(r.Keys, k)
	}
	return r, nil
}

// Signer is the key that signs and seals: the first root secret's.
func (r *Ring) Signer() *Key { return r.Keys[0] }

// ByID returns the key of id, nil for none.
func (r *Ring) ByID(id string) *Key {
	for _, k := range r.Keys {
		if k.ID == id {
			return k
		}
	}
	return nil
}

// MatchesAny reports whether a stored check value, by key id, is that of
// a key of the ring. The values are compared in constant time.
func (r *Ring) MatchesAny(checks map[string]string) bool {
	for _, k := range r.Keys {
		if v, ok := checks[k.ID]; ok && hmac.Equal([]byte(v), []byte(k.Check)) {
			return true
		}
	}
	return false
}

// CheckEnrollment verifies a signature made by [Key.EnrollmentSignature]
// for the account's current generation, under any key of the ring.
func (r *Ring) CheckEnrollment(username, url, sig string, gen uint64, now time.Time) bool {
	return CheckEnrollment(username, url, sig, gen, now, func(id string) []byte {
		if k := r.ByID(id); k != nil {
			return k.enroll
		}
		return nil
	})
}

// SealTOTP encrypts a TOTP secret with AES-256-GCM under the signer,
// bound to the username (see [Seal]).
func (r *Ring) SealTOTP(rnd io.Reader, username string, secret []byte) ([]byte, error) {
	k := r.Signer()
	return Seal(k.seal, k.ID, rnd, username, secret)
}

// SealedBySigner reports whether a sealed secret is under the signer.
func (r *Ring) SealedBySigner(sealed []byte) bool { return SealedKeyID(sealed) == r.Signer().ID }

// OpenTOTP decrypts a secret sealed by SealTOTP under any key of the ring.
func (r *Ring) OpenTOTP(username string, sealed []byte) ([]byte, error) {
	return Open(username, sealed, func(id string) cipher.AEAD {
		if k := r.ByID(id); k != nil {
			return k.seal
		}
		return nil
	})
}

// DigestMachineSecret returns the stored form of a machine secret under
// the signer (see [hashfmt.EncodeMachineDigest]).
func (r *Ring) DigestMachineSecret(name, secret string) string {
	k := r.Signer()
	mac := k.MachineMAC(name, secret)
	return hashfmt.EncodeMachineDigest(k.ID, mac[:])
}

// CheckMachineSecret reports whether secret is the one stored, in constant
// time, and whether the stored form should be replaced because it is
// under a key other than the signer. A stored form that is malformed, or
// under a root secret no longer configured, gives an error wrapping
// [hashfmt.ErrMalformed]: the secret cannot be checked, through no fault
// of the holder.
func (r *Ring) CheckMachineSecret(stored, name, secret string) (ok, upgrade bool, err error) {
	k, mac, err := r.ParseMachineDigest(stored)
	if err != nil {
		return false, false, err
	}
	if got := k.MachineMAC(name, secret); !hmac.Equal(got[:], mac) {
		return false, false, nil
	}
	return true, k != r.Signer(), nil
}

// ParseMachineDigest reads a stored digest strictly and finds its key.
func (r *Ring) ParseMachineDigest(stored string) (*Key, []byte, error) {
	id, mac, err := hashfmt.ParseMachineDigest(stored)
	if err != nil {
		return nil, nil, err
	}
	k := r.ByID(id)
	if k == nil {
		return nil, nil, fmt.Errorf("%w: machine secret digest under root secret %s, which is not configured", hashfmt.ErrMalformed, id)
	}
	return k, mac, nil
}

// IDs lists the key ids of the ring, the signer's first.
func (r *Ring) IDs() string {
	ids := make([]string, len(r.Keys))
	for i, k := range r.Keys {
		ids[i] = k.ID
	}
	return strings.Join(ids, ", ")
}
