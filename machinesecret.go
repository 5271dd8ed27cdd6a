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

	"github.com/nmauth/nmauth/internal/hashfmt"
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
//     (as root secrets are checked, see secretWeakness);
//   - an estimate of its bits that prices what a person types (runs of
//     the alphabet and of the keyboard's rows, common words) for what
//     they are worth gives at least 128 (see secretBits), so that
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
const (
	machineDigestPrefix = hashfmt.MachineDigestPrefix
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

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
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
		if alpha.size >= 62 && mostlyOneCase(text) {
			return false
		}
		return secretBits(text, math.Log2(float64(alpha.size))) >= machineSecretBits
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

// secretBits estimates how many bits a secret holds that is written in an
// alphabet of charBits bits a character, by the cheapest way to spell it
// out of pieces an attacker's guesser tries first (as zxcvbn does):
//
//   - a run of at least minRun characters in a row of orderedRuns (the
//     alphabet, the digits, a row of the keyboard), forwards or
//     backwards, costs the bits of its first character, of which row and
//     way, and of its length;
//   - a common word of commonWords costs the bits of picking it from the
//     list and of its case, but only when such words make up at least
//     half the secret, as in a pass phrase: in random text a word now and
//     then is chance, not a choice;
//   - any other character costs charBits.
//
// The pieces are taken greedily from the left, the longest first. A run
// of eight, or half a secret in words, comes about in random text less
// than once in a hundred million secrets, so random secrets keep their
// bits and a person's patterns lose theirs.
func secretBits(s string, charBits float64) float64 {
	n := len(s)
	words := 2*wordCoverage(s) >= n
	bits := 0.0
	for i := 0; i < n; {
		run := orderedRun(s[i:])
		word := 0
		if words {
			word = commonWordAt(s[i:])
		}
		switch {
		case run >= minRun && run >= word:
			bits += charBits + runChoiceBits + math.Log2(float64(run))
			i += run
		case word > 0:
			bits += wordBits
			i += word
		default:
			bits += charBits
			i++
		}
	}
	return bits
}

// wordCoverage counts the characters of s that common words cover, taken
// greedily from the left.
func wordCoverage(s string) int {
	covered := 0
	for i := 0; i < len(s); {
		if w := commonWordAt(s[i:]); w > 0 {
			covered += w
			i += w
		} else {
			i++
		}
	}
	return covered
}

// orderedRun is the length of the run of s's first characters that
// follow each other in one row of orderedRuns, one way.
func orderedRun(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	ways := runSteps(s[0], s[1])
	n := 1
	for ways != 0 {
		n++
		if n == len(s) {
			break
		}
		ways &= runSteps(s[n-1], s[n])
	}
	return n
}

// runSteps says in which rows of orderedRuns, and which way, b follows a:
// bit 2r for forwards in row r, bit 2r+1 for backwards.
func runSteps(a, b byte) uint16 {
	ia, ib := runIndex(a), runIndex(b)
	if ia < 0 || ib < 0 {
		return 0
	}
	return runStepTable[ia][ib]
}

// runIndex numbers the characters of the rows: the digits, then the
// letters, either case; -1 for any other.
func runIndex(c byte) int { return int(runIndexes[c]) }

// runIndexes is runIndex as a table.
var runIndexes = func() (t [256]int8) {
	for c := range t {
		switch {
		case '0' <= c && c <= '9':
			t[c] = int8(c - '0')
		case 'a' <= c && c <= 'z':
			t[c] = int8(10 + c - 'a')
		case 'A' <= c && c <= 'Z':
			t[c] = int8(10 + c - 'A')
		default:
			t[c] = -1
		}
	}
	return t
}()

// commonWordAt is the length of the longest common word that s begins
// with, or 0. A table of three-letter beginnings spares the look-ups of
// nearly every position of random text.
func commonWordAt(s string) int {
	if len(s) < minWordLen {
		return 0
	}
	i0, i1, i2 := runIndex(s[0])-10, runIndex(s[1])-10, runIndex(s[2])-10
	if i0 < 0 || i1 < 0 || i2 < 0 {
		return 0
	}
	k := (i0*26+i1)*26 + i2
	if wordStarts[k/64]&(1<<(k%64)) == 0 {
		return 0
	}
	var lower [maxWordLen]byte
	n := min(len(s), maxWordLen)
	for i := range n {
		// Lower case; no other character becomes a letter.
		lower[i] = s[i] | 0x20
	}
	for l := n; l >= minWordLen; l-- {
		if _, ok := commonWords[string(lower[:l])]; ok {
			return l
		}
	}
	return 0
}

const (
	// minRun is the shortest run of a row that counts as one piece.
	minRun = 8
	// minWordLen and maxWordLen bound the words of commonWords.
	minWordLen = 4
	maxWordLen = 12
)

// orderedRuns are the rows a person types in order.
var orderedRuns = []string{
	"abcdefghijklmnopqrstuvwxyz",
	"0123456789",
	"1234567890",
	"qwertyuiop",
	"asdfghjkl",
	"zxcvbnm",
}

var (
	// runChoiceBits is the cost of naming a row and a way.
	runChoiceBits = math.Log2(float64(2 * len(orderedRuns)))
	// runStepTable[a][b] is runSteps for the characters numbered a and b.
	runStepTable = func() (t [36][36]uint16) {
		for r, row := range orderedRuns {
			for i := 1; i < len(row); i++ {
				a, b := runIndex(row[i-1]), runIndex(row[i])
				t[a][b] |= 1 << (2 * r)
				t[b][a] |= 1 << (2*r + 1)
			}
		}
		return t
	}()
	// commonWords are words a person builds a pass phrase of.
	commonWords = func() map[string]struct{} {
		m := make(map[string]struct{})
		for _, w := range strings.Fields(commonWordList) {
			if len(w) >= minWordLen && len(w) <= maxWordLen {
				m[w] = struct{}{}
			}
		}
		return m
	}()
	// wordBits is the cost of one word: its pick from the list, and one
	// bit for its case.
	wordBits = math.Log2(float64(len(commonWords))) + 1
	// wordStarts has the bit of each three letters a common word begins
	// with.
	wordStarts = func() (t [26*26*26/64 + 1]uint64) {
		for w := range commonWords {
			k := (int(w[0]-'a')*26+int(w[1]-'a'))*26 + int(w[2]-'a')
			t[k/64] |= 1 << (k % 64)
		}
		return t
	}()
)

// commonWordList holds words of 4 to 12 lower-case letters that people
// make passwords and pass phrases of.
const commonWordList = `
password passwd admin administrator root user login welcome letmein secret master default guest
changeme access server network system manager service office company test testing
correct horse battery staple dragon monkey shadow sunshine princess football baseball soccer hockey
superman batman iloveyou love lover hello hunter killer ranger summer winter spring autumn
michael jennifer jordan thomas charlie robert daniel andrew joshua matthew jessica ashley
pepper ginger cookie coffee chocolate orange banana apple cherry lemon mango peach
silver golden diamond purple yellow green black white brown blue pink
tiger lion eagle falcon wolf bear shark snake horse pony kitten puppy doggy
freedom liberty justice peace power magic wizard knight castle kingdom empire
computer internet google yahoo windows linux ubuntu apple android iphone
money dollar bitcoin cash bank credit
house home family friend friends mother father sister brother baby angel heaven
happy lucky smile funny crazy cool sweet pretty beautiful little big small
water fire earth wind storm thunder lightning rain snow cloud river ocean mountain forest
music guitar piano rock metal jazz dance party
star stars moon planet space rocket galaxy
dream dreams night morning evening today tomorrow forever always never
first second third last next best good great super
pass word code key lock door open close start stop begin end
book paper pencil table chair window garden flower tree leaf
car truck train plane boat ship bike
nothing something anything everything
monday tuesday wednesday thursday friday saturday sunday
january february march april june july august september october november december
correcthorse trustno
`
