package hashfmt

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// EncodeMachineDigest writes the stored form of a machine secret's MAC
// under the root secret keyID: "$nmauth-hmac-sha256$k=<key id>$<base64 MAC>".
func EncodeMachineDigest(keyID string, mac []byte) string {
	return MachineDigestPrefix + keyID + "$" + base64.RawStdEncoding.EncodeToString(mac)
}

// ParseMachineDigest reads a stored machine-secret digest strictly: a key
// id of 16 hex digits and a canonical base64 MAC of SHA-256's size.
func ParseMachineDigest(stored string) (keyID string, mac []byte, err error) {
	rest, _ := strings.CutPrefix(stored, MachineDigestPrefix)
	id, b64, found := strings.Cut(rest, "$")
	if _, err := hex.DecodeString(id); err != nil || !found || len(id) != 16 {
		return "", nil, fmt.Errorf("%w: machine secret digest: bad key id", ErrMalformed)
	}
	mac, err = base64.RawStdEncoding.Strict().DecodeString(b64)
	if err != nil || len(mac) != sha256.Size || base64.RawStdEncoding.EncodeToString(mac) != b64 {
		return "", nil, fmt.Errorf("%w: machine secret digest: bad encoding", ErrMalformed)
	}
	return id, mac, nil
}

// MachineDigestKeyID is the key id a stored digest names, "" if stored is
// no machine-secret digest.
func MachineDigestKeyID(stored string) string {
	rest, ok := strings.CutPrefix(stored, MachineDigestPrefix)
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, "$")
	return id
}
