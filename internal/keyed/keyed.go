// Package keyed writes and reads a credential that is kept only as a keyed
// digest of its secret, an access token or an enrollment key: a prefix, an
// id, the secret, and a check of the digest's first bytes, joined by "_",
// each value in unpadded base32. The check lets a made-up credential be
// refused before any Store call.
package keyed

import (
	"encoding/base32"
	"io"
	"strings"
)

const (
	// IDBytes, SecretBytes and CheckBytes are the sizes of the id, the
	// secret and the check.
	IDBytes     = 10
	SecretBytes = 16
	CheckBytes  = 16
)

// Encoding is the spelling of every value: base32 without padding.
var Encoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// Len is the length of every credential under prefix.
func Len(prefix string) int {
	return len(prefix) + Encoding.EncodedLen(IDBytes) + 1 +
		Encoding.EncodedLen(SecretBytes) + 1 + Encoding.EncodedLen(CheckBytes)
}

// Draw reads a new id and secret from rnd.
func Draw(rnd io.Reader) (id, secret string, err error) {
	raw := make([]byte, IDBytes+SecretBytes)
	if _, err := io.ReadFull(rnd, raw); err != nil {
		return "", "", err
	}
	return Encoding.EncodeToString(raw[:IDBytes]), Encoding.EncodeToString(raw[IDBytes:]), nil
}

// Format returns the credential as its holder gives it: prefix, id, secret
// and the check, the first CheckBytes of mac.
func Format(prefix, id, secret string, mac []byte) string {
	return prefix + id + "_" + secret + "_" + Encoding.EncodeToString(mac[:CheckBytes])
}

// Split reads a credential's id, secret and check, or reports that it is
// no well-formed credential under prefix. Each value has one spelling
// only: base32 without padding can end in bits that decoding ignores, and
// a value spelled another way is refused.
func Split(prefix, credential string) (id, secret string, check []byte, ok bool) {
	rest, found := strings.CutPrefix(credential, prefix)
	if !found || len(credential) != Len(prefix) {
		return "", "", nil, false
	}
	parts := strings.Split(rest, "_")
	if len(parts) != 3 {
		return "", "", nil, false
	}
	for _, s := range parts {
		b, err := Encoding.DecodeString(s)
		if err != nil || Encoding.EncodeToString(b) != s {
			return "", "", nil, false
		}
		check = b
	}
	return parts[0], parts[1], check, true
}
