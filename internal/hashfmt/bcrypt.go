package hashfmt

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

const (
	bcryptEncodedLength = 60
	// weakBcryptCost is OWASP's Password Storage Cheat Sheet's minimum.
	weakBcryptCost = 10
)

// isBcryptPrefix accepts the bcrypt variants that share one algorithm.
// $2x$ marks hashes from a buggy implementation and is refused with the
// other unknown formats.
func isBcryptPrefix(s string) bool {
	return strings.HasPrefix(s, "$2a$") || strings.HasPrefix(s, "$2b$") || strings.HasPrefix(s, "$2y$")
}

// bcryptCheck is a bcrypt hash that checkBcryptHash accepted, checked by
// its engine. It is always replaced once it matches.
type bcryptCheck struct {
	e       Engines
	encoded string
}

func (c bcryptCheck) Threads() int { return 1 }

func (c bcryptCheck) Check(password string) (ok, needsUpdate bool, err error) {
	err = c.e.BcryptCompare([]byte(c.encoded), []byte(password))
	switch {
	case err == nil:
		return true, true, nil
	case errors.Is(err, bcrypt.ErrMismatchedHashAndPassword):
		return false, false, nil
	default:
		return false, false, fmt.Errorf("%w: bcrypt: %w", ErrMalformed, err)
	}
}

// bcryptWeakness checks a bcrypt hash as checkBcryptHash does and says
// why it is weak, "" when it is not.
func bcryptWeakness(encoded string) (string, error) {
	if err := checkBcryptHash(encoded); err != nil {
		return "", err
	}
	if cost, _ := strconv.Atoi(encoded[4:6]); cost < weakBcryptCost {
		return fmt.Sprintf("bcrypt cost %d below %d", cost, weakBcryptCost), nil
	}
	return "", nil
}

// checkBcryptHash checks the shape "$2b$NN$" + 53 characters of bcrypt's
// base64 alphabet and bounds the cost, before any work is spent on it.
func checkBcryptHash(s string) error {
	if len(s) != bcryptEncodedLength || s[6] != '$' {
		return fmt.Errorf("%w: bcrypt: bad shape", ErrMalformed)
	}
	if !isDigit(s[4]) || !isDigit(s[5]) {
		return fmt.Errorf("%w: bcrypt: bad cost", ErrMalformed)
	}
	cost := int(s[4]-'0')*10 + int(s[5]-'0')
	if cost < bcrypt.MinCost || cost > MaxBcryptCost {
		return fmt.Errorf("%w: bcrypt: cost %d outside %d..%d", ErrMalformed, cost, bcrypt.MinCost, MaxBcryptCost)
	}
	for _, c := range s[7:] {
		if !isBcryptB64(c) {
			return fmt.Errorf("%w: bcrypt: bad encoding", ErrMalformed)
		}
	}
	return nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isBcryptB64(c rune) bool {
	return c == '.' || c == '/' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}
