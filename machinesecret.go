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
	"math"
	"strings"
)

// A machine secret is a host password that a program drew from a random
// source, such as netclient's 32 base32 characters or nmauthd's generated
// ones. It holds at least 128 bits, so guessing it is hopeless at any
// speed, and a slow hash buys nothing: it is kept as an HMAC-SHA256 under
// its own subkey of the root secret (NIST SP 800-63B §5.1.1.2 accepts one
// keyed hash for secrets of 112 bits and more), which a login checks in
// microseconds. Without the root secret a copy of the database cannot
// test a guess at all.
//
// A secret qualifies when
//
//   - all its characters come from one alphabet that random secrets are
//     written in (see machineAlphabets), ignoring '=' padding at its end;
//   - its length times log2 of that alphabet's size is at least 128 bits:
//     32 hex digits, 26 base32 characters, 22 base64 ones;
//   - it reads as random text: it shows at least half the distinct
//     characters, and half the distinct pairs of neighbours, that random
//     text of its length shows on average (so no repeated pattern), and in
//     an alphabet of both cases it is not nine tenths letters of one case
//     (as root secrets are checked, see secretWeakness).
//
// A secret is measured by the smallest of those alphabets that holds it,
// so a random one that happens to avoid a class of characters counts for
// less: 22 base64 characters that are all lower case and digits (one time
// in 300 000) measure 114 bits and keep argon2id. From 25 characters on,
// no such chance brings a random base64 secret below 128 bits.
//
// Any other secret keeps argon2id. These checks refuse the patterns and
// short strings a person types, not every phrase: a long run of words
// without spaces can pass. Such a secret then loses only argon2id's
// slowness against an attacker who holds both the database and the root
// secret; online, guesses are limited the same either way. Give hosts
// generated secrets.
const (
	machineDigestPrefix = "$nmauth-hmac-sha256$k="
	machineSecretBits   = 128
)

// machineAlphabets are the alphabets random secrets are written in,
// smallest first, so that a secret is measured by the smallest that holds
// it.
var machineAlphabets = []struct {
	size     int
	contains func(c byte) bool
}{
	{16, func(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' }},
	{16, func(c byte) bool { return isDigit(c) || 'A' <= c && c <= 'F' }},
	{32, func(c byte) bool { return '2' <= c && c <= '7' || isUpper(c) }},
	{32, func(c byte) bool { return '2' <= c && c <= '7' || isLower(c) }},
	{36, func(c byte) bool { return isDigit(c) || isUpper(c) }},
	{36, func(c byte) bool { return isDigit(c) || isLower(c) }},
	{62, isAlnum},
	{64, func(c byte) bool { return isAlnum(c) || c == '+' || c == '/' }},
	{64, func(c byte) bool { return isAlnum(c) || c == '-' || c == '_' }},
}

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isAlnum(c byte) bool { return isDigit(c) || isUpper(c) || isLower(c) }

// isMachineSecret reports whether secret qualifies as a machine secret by
// the rules above.
func isMachineSecret(secret string) bool {
	text := strings.TrimRight(secret, "=")
	if text == "" || len(secret) > maxPasswordLen {
		return false
	}
	for _, alpha := range machineAlphabets {
		if !allBytes(text, alpha.contains) {
			continue
		}
		if float64(len(text))*math.Log2(float64(alpha.size)) < machineSecretBits {
			return false
		}
		if float64(distinct([]byte(text))) < halfExpectedDistinct(len(text), alpha.size) ||
			float64(distinctPairs(text)) < halfExpectedDistinct(len(text)-1, alpha.size*alpha.size) {
			return false
		}
		return alpha.size < 62 || !mostlyOneCase(text)
	}
	return false
}

// distinctPairs counts the distinct pairs of neighbouring characters of
// s: few for a repeated pattern, however many characters the pattern has.
func distinctPairs(s string) int {
	seen := make(map[[2]byte]bool, len(s))
	for i := 1; i < len(s); i++ {
		seen[[2]byte{s[i-1], s[i]}] = true
	}
	return len(seen)
}

func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

// isMachineDigest reports whether a stored credential is a machine-secret
// digest rather than a password hash.
func isMachineDigest(stored string) bool { return strings.HasPrefix(stored, machineDigestPrefix) }

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
