package nmauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/nmauth/nmauth/internal/hashfmt"
)

// machineDigestPrefix begins the stored form of a machine secret (see
// internal/secret for what qualifies as one, and hashfmt for the format).
const machineDigestPrefix = hashfmt.MachineDigestPrefix

// machineMAC is the HMAC of a host's secret under one root secret's
// machine subkey. The host id is part of the message, length first, so
// that two hosts with the same secret store different digests.
//
// The HMAC states are kept in the key's pool between calls, so that a
// login does not allocate and key a new one.
func machineMAC(k *ringKey, name, secret string) (mac [sha256.Size]byte) {
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

// digestMachineSecret returns the stored form of a machine secret under
// the first root secret: "$nmauth-hmac-sha256$k=<key id>$<base64 MAC>".
func (r *keyRing) digestMachineSecret(name, secret string) string {
	k := r.signer()
	mac := machineMAC(k, name, secret)
	return machineDigestPrefix + k.id + "$" + base64.RawStdEncoding.EncodeToString(mac[:])
}

// checkMachineSecret reports whether secret is the one stored, in constant
// time, and whether the stored form should be replaced because it is
// under a root secret other than the first. A stored form that is
// malformed, or under a root secret no longer configured, gives an error
// wrapping errMalformedHash: the secret cannot be checked, through no
// fault of the host.
func (r *keyRing) checkMachineSecret(stored, name, secret string) (ok, upgrade bool, err error) {
	k, mac, err := r.parseMachineDigest(stored)
	if err != nil {
		return false, false, err
	}
	if got := machineMAC(k, name, secret); !hmac.Equal(got[:], mac) {
		return false, false, nil
	}
	return true, k != r.signer(), nil
}

// dummyMachineCheck does the work of checkMachineSecret for an account
// that does not exist, so that it answers in the same time.
func (r *keyRing) dummyMachineCheck(name, secret string) {
	var zero [sha256.Size]byte
	got := machineMAC(r.signer(), name, secret)
	_ = hmac.Equal(got[:], zero[:])
}

// parseMachineDigest reads a stored digest strictly and finds its key.
func (r *keyRing) parseMachineDigest(stored string) (*ringKey, []byte, error) {
	rest, _ := strings.CutPrefix(stored, machineDigestPrefix)
	id, b64, found := strings.Cut(rest, "$")
	if _, err := hex.DecodeString(id); err != nil || !found || len(id) != 16 {
		return nil, nil, fmt.Errorf("%w: machine secret digest: bad key id", errMalformedHash)
	}
	mac, err := base64.RawStdEncoding.Strict().DecodeString(b64)
	if err != nil || len(mac) != sha256.Size || base64.RawStdEncoding.EncodeToString(mac) != b64 {
		return nil, nil, fmt.Errorf("%w: machine secret digest: bad encoding", errMalformedHash)
	}
	k := r.byID(id)
	if k == nil {
		return nil, nil, fmt.Errorf("%w: machine secret digest under root secret %s, which is not configured", errMalformedHash, id)
	}
	return k, mac, nil
}

// machineDigestKeyID is the key id a stored digest names, "" if stored is
// no machine-secret digest.
func machineDigestKeyID(stored string) string {
	rest, ok := strings.CutPrefix(stored, machineDigestPrefix)
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, "$")
	return id
}
