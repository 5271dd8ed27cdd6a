package secret

import (
	"math"
	"strings"
)

// Weakness says why a root secret read from text does not look drawn
// at random, or returns "". text is the secret as written, alphabet the
// number of symbols of its encoding (16 for hex, 64 for base64) and b the
// bytes it decodes to. The tests, each of which a secret of 32 random
// bytes or more fails with a probability below 10^-9:
//
//   - a short alphabet: the text has fewer than half as many distinct
//     characters as random text of its length has on average (64 hex
//     zeros, a pattern such as deadbeef repeated);
//   - repeated bytes: the bytes take fewer than half as many distinct
//     values as random bytes of their length do on average;
//   - text for bytes: every byte is printable ASCII, so the secret is a
//     phrase that was encoded, not random bytes;
//   - words: nine in ten of the characters of base64 text are letters of
//     one case or base64's punctuation, as in words joined by dashes that
//     happen to read as base64.
//
// They catch the usual mistakes, not every secret a person made up.
func Weakness(text string, alphabet int, b []byte) string {
	text = strings.TrimRight(text, "=")
	if alphabet == 16 {
		text = strings.ToLower(text) // hex reads both cases alike
	}
	switch {
	case float64(distinct([]byte(text))) < halfExpectedDistinct(len(text), alphabet):
		return "it has too few distinct characters (a short alphabet or a repeated pattern)"
	case float64(distinct(b)) < halfExpectedDistinct(len(b), 256):
		return "its bytes repeat too much"
	case PrintableASCII(b):
		return "it decodes to printable text, not random bytes"
	case alphabet == 64 && mostlyOneCase(text):
		return "it is mostly letters of one case, like words"
	}
	return ""
}

// halfExpectedDistinct is half the number of distinct symbols that n
// symbols drawn at random from an alphabet of size a take on average.
func halfExpectedDistinct(n, a int) float64 {
	return float64(a) * (1 - math.Pow(1-1/float64(a), float64(n))) / 2
}

func distinct(b []byte) int {
	var seen [256]bool
	n := 0
	for _, c := range b {
		if !seen[c] {
			seen[c] = true
			n++
		}
	}
	return n
}

// mostlyOneCase reports whether nine in ten characters of base64 text or
// more are lower-case letters or punctuation, or upper-case letters or
// punctuation. In random base64 about 44% are of either kind.
func mostlyOneCase(text string) bool {
	var lower, upper, punct int
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case 'a' <= c && c <= 'z':
			lower++
		case 'A' <= c && c <= 'Z':
			upper++
		case c == '+' || c == '/' || c == '-' || c == '_':
			punct++
		}
	}
	return 10*(lower+punct) >= 9*len(text) || 10*(upper+punct) >= 9*len(text)
}
