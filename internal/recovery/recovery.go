// Package recovery is the recovery codes of a second factor: Count of
// them at a time, each 16 characters of a 32-symbol alphabet (80 random
// bits), shown once as xxxx-xxxx-xxxx-xxxx and kept only as hashes. A
// code typed by hand matches whatever its case, dashes and spaces.
package recovery

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// Count is how many codes [New] makes; chars is the length of each.
const (
	Count = 10
	chars = 16
)

// alphabet has 32 symbols, so a random byte masked to 5 bits picks one
// without bias.
const alphabet = "abcdefghijkmnpqrstuvwxyz23456789"

// New returns fresh codes formatted xxxx-xxxx-xxxx-xxxx and their hashes.
func New(rnd io.Reader) (codes, hashes []string, err error) {
	buf := make([]byte, chars)
	for range Count {
		if _, err := io.ReadFull(rnd, buf); err != nil {
			return nil, nil, fmt.Errorf("nmauth: recovery code: %w", err)
		}
		var b strings.Builder
		for i, x := range buf {
			if i > 0 && i%4 == 0 {
				b.WriteByte('-')
			}
			b.WriteByte(alphabet[x&31])
		}
		codes = append(codes, b.String())
		hashes = append(hashes, hash(b.String()))
	}
	return codes, hashes, nil
}

// normalize drops dashes and spaces and lowers the case, so a code typed
// by hand matches.
func normalize(code string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '-' || r == ' ':
			return -1
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return r
	}, code)
}

// IsCode reports whether code has the shape of a recovery code.
func IsCode(code string) bool {
	if len(code) > 4*chars {
		return false
	}
	n := normalize(code)
	if len(n) != chars {
		return false
	}
	for i := 0; i < len(n); i++ {
		if strings.IndexByte(alphabet, n[i]) < 0 {
			return false
		}
	}
	return true
}

// hash is a plain SHA-256: with 80 random bits a code cannot be found from
// its hash by search.
func hash(code string) string {
	sum := sha256.Sum256([]byte(normalize(code)))
	return hex.EncodeToString(sum[:])
}

// Use looks code up in hashes, comparing every stored hash. If one
// matches, it returns hashes without it and true; else hashes unchanged
// and false. It never writes to the array of hashes, which the caller's
// earlier copies of the list may share.
func Use(hashes []string, code string) (left []string, ok bool) {
	h := []byte(hash(code))
	found := -1
	for i, stored := range hashes {
		if subtle.ConstantTimeCompare(h, []byte(stored)) == 1 {
			found = i
		}
	}
	if found < 0 {
		return hashes, false
	}
	return append(hashes[:found:found], hashes[found+1:]...), true
}
