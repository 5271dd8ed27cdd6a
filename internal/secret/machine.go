package secret

import (
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
//     (as root secrets are checked, see Weakness);
//   - an estimate of its bits that prices what a person types (runs of
//     the alphabet and of the keyboard's rows, common words) for what
//     they are worth gives at least 128 (see bits), so that
//     "abcdefghijklmnopqrstuvwxyz", "qwertyuiopasdfghjklzxcvbnm" and
//     "correcthorsebatterystaple1" keep argon2id.
//
// A secret is measured by the smallest of those alphabets that holds it,
// so a random one that happens to avoid a class of characters counts for
// less: 22 base64 characters that are all lower case and digits (one time
// in 300 000) measure 114 bits and keep argon2id. From 25 characters on,
// no such chance brings a random base64 secret below 128 bits.
//
// Any other secret keeps argon2id. These checks refuse the patterns and
// short strings a person types, not every phrase: a long run of words
// that are not common ones, without spaces, can pass. Such a secret then loses only argon2id's
// slowness against an attacker who holds both the database and the root
// secret; online, guesses are limited the same either way. Give hosts
// generated secrets.

// machineBits is the least a machine secret holds.
const machineBits = 128

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

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isAlnum(c byte) bool { return isDigit(c) || isUpper(c) || isLower(c) }

// IsMachine reports whether secret, prepared, qualifies as a machine
// secret by the rules above.
func IsMachine(secret string) bool {
	text := strings.TrimRight(secret, "=")
	if text == "" || len(secret) > MaxLen {
		return false
	}
	for _, alpha := range machineAlphabets {
		if !allBytes(text, alpha.contains) {
			continue
		}
		if float64(len(text))*math.Log2(float64(alpha.size)) < machineBits {
			return false
		}
		if float64(distinct([]byte(text))) < halfExpectedDistinct(len(text), alpha.size) ||
			float64(distinctPairs(text)) < halfExpectedDistinct(len(text)-1, alpha.size*alpha.size) {
			return false
		}
		if alpha.size >= 62 && mostlyOneCase(text) {
			return false
		}
		return bits(text, math.Log2(float64(alpha.size))) >= machineBits
	}
	return false
}

// distinctPairs counts the distinct pairs of neighbouring characters of
// s: few for a repeated pattern, however many characters the pattern has.
// s is written in one of machineAlphabets, whose characters symbolCode
// numbers below 64 (within one alphabet, without a clash), so that a
// bitset on the stack holds the pairs seen and a login allocates nothing
// for it.
func distinctPairs(s string) int {
	var seen [64 * 64 / 64]uint64
	n := 0
	for i := 1; i < len(s); i++ {
		k := int(symbolCode[s[i-1]])*64 + int(symbolCode[s[i]])
		if seen[k/64]&(1<<(k%64)) == 0 {
			seen[k/64] |= 1 << (k % 64)
			n++
		}
	}
	return n
}

// symbolCode numbers the characters of machineAlphabets: digits,
// upper-case and lower-case letters, and the two symbols of either
// base64 alphabet ('+' or '-', '/' or '_').
var symbolCode = func() (t [256]uint8) {
	const symbols = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz+/"
	for i := range len(symbols) {
		t[symbols[i]] = uint8(i)
	}
	t['-'], t['_'] = t['+'], t['/']
	return t
}()

func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}
