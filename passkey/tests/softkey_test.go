package tests_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
)

// The flags of authenticator data (WebAuthn §6.1).
const (
	flagUP = 0x01 // user present
	flagUV = 0x04 // user verified
	flagAT = 0x40 // attested credential data included
)

// softKey is a software authenticator holding one ECDSA P-256 credential,
// written here from the WebAuthn specification, so that tests can make
// every byte of a registration and an assertion, the wrong ones included,
// without a browser.
type softKey struct {
	id     []byte
	key    *ecdsa.PrivateKey
	handle []byte // the user handle the credential was made for
	count  uint32 // the last sign count reported
}

func newSoftKey(t testing.TB) *softKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id := make([]byte, 32)
	rand.Read(id)
	return &softKey{id: id, key: key}
}

// ceremony is what a browser and authenticator put in one answer. Tests
// change its fields to make an answer wrong in one way.
type ceremony struct {
	typ       string // clientDataJSON's type
	challenge string // base64url, as the options gave it
	origin    string
	rpID      string // whose SHA-256 the authenticator data names
	flags     byte
	count     uint32
	// userHandle is what an assertion returns; nil for none.
	userHandle []byte
	// forge signs with another key than the credential's.
	forge bool
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func clientData(c ceremony) []byte {
	b, _ := json.Marshal(map[string]any{"type": c.typ, "challenge": c.challenge, "origin": c.origin, "crossOrigin": false})
	return b
}

func authData(c ceremony, attested []byte) []byte {
	rp := sha256.Sum256([]byte(c.rpID))
	out := append(rp[:], c.flags)
	out = binary.BigEndian.AppendUint32(out, c.count)
	return append(out, attested...)
}

// coseKey is the credential's public key as COSE_Key (RFC 9053): EC2,
// ES256, P-256.
func (k *softKey) coseKey(t testing.TB) []byte {
	t.Helper()
	pub, err := k.key.PublicKey.Bytes() // 0x04 | x | y
	if err != nil {
		t.Fatal(err)
	}
	b, err := webauthncbor.Marshal(map[int]any{1: 2, 3: -7, -1: 1, -2: pub[1:33], -3: pub[33:65]})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// create answers creation options as navigator.credentials.create would,
// with the "none" attestation: the PublicKeyCredential as toJSON() gives it.
func (k *softKey) create(t testing.TB, c ceremony) []byte {
	t.Helper()
	attested := make([]byte, 16) // a zero AAGUID, as most passkeys send
	attested = binary.BigEndian.AppendUint16(attested, uint16(len(k.id)))
	attested = append(attested, k.id...)
	attested = append(attested, k.coseKey(t)...)
	obj, err := webauthncbor.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": authData(c, attested)})
	if err != nil {
		t.Fatal(err)
	}
	return credentialJSON(k.id, map[string]any{
		"clientDataJSON":    b64(clientData(c)),
		"attestationObject": b64(obj),
		"transports":        []string{"internal"},
	})
}

// get answers request options as navigator.credentials.get would.
func (k *softKey) get(t testing.TB, c ceremony) []byte {
	t.Helper()
	cd := clientData(c)
	ad := authData(c, nil)
	sum := sha256.Sum256(cd)
	signer := k.key
	if c.forge {
		signer = newSoftKey(t).key
	}
	digest := sha256.Sum256(append(append([]byte{}, ad...), sum[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, signer, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	resp := map[string]any{"clientDataJSON": b64(cd), "authenticatorData": b64(ad), "signature": b64(sig)}
	if c.userHandle != nil {
		resp["userHandle"] = b64(c.userHandle)
	}
	return credentialJSON(k.id, resp)
}

func credentialJSON(id []byte, response map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{
		"id": b64(id), "rawId": b64(id), "type": "public-key",
		"response": response, "clientExtensionResults": map[string]any{},
	})
	return b
}
