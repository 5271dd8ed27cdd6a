package secret

import (
	"math"
	"strings"
)

// bits estimates how many bits a secret holds that is written in an
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
func bits(s string, charBits float64) float64 {
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
