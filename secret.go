package nmauth

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/nmauth/nmauth/internal/secret"
)

// ParseSecrets reads root secrets for [Config.Secrets] from text, such as
// an environment variable: one secret, or a comma-separated list of them,
// the first of which signs and seals while all of them verify and open.
// Each secret is hex, or else standard or URL-safe base64 with or without
// padding, and must decode to at least 32 bytes; spaces and
// newlines around it are ignored. A string of hex digits is always read
// as hex, so that a short or mistyped hex secret never passes for a long
// base64 one. An error names the position of a bad secret, never its
// content.
//
// A secret must also look drawn at random: one whose text has too few
// distinct characters for its length (64 hex zeros, a repeated pattern),
// whose bytes repeat too much, that decodes to printable text, or whose
// base64 is nine tenths letters of one case (words that happen to read as
// base64) is refused with advice on making a good one, such as
// "openssl rand -base64 32". A secret of random bytes fails these tests
// with a probability below 10^-9. [Config.Secrets] takes bytes as they
// are: these tests are for secrets a person may have typed.
func ParseSecrets(s string) ([][]byte, error) {
	secrets, err := parseSecrets(s)
	if err != nil {
		return nil, fmt.Errorf("nmauth: %w", err)
	}
	return secrets, nil
}

// parseSecrets is [ParseSecrets] with errors that do not name the
// package.
func parseSecrets(s string) ([][]byte, error) {
	fields := strings.Split(s, ",")
	secrets := make([][]byte, 0, len(fields))
	for i, field := range fields {
		b, err := decodeSecret(field)
		if err != nil {
			if len(fields) == 1 {
				return nil, fmt.Errorf("root secret: %w", err)
			}
			return nil, fmt.Errorf("root secret %d of the list: %w", i+1, err)
		}
		secrets = append(secrets, b)
	}
	return secrets, nil
}

// decodeSecret reads one secret of [ParseSecrets].
func decodeSecret(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty")
	}
	var b []byte
	var err error
	alphabet := 16
	if strings.Trim(s, "0123456789abcdefABCDEF") == "" {
		if b, err = hex.DecodeString(s); err != nil {
			return nil, errors.New("malformed hex")
		}
	} else if b, err = decodeBase64(s); err != nil {
		return nil, errors.New("neither hex nor base64")
	} else {
		alphabet = 64
	}
	if len(b) < minSecretLen {
		return nil, fmt.Errorf("%d bytes, need at least %d", len(b), minSecretLen)
	}
	if why := secret.Weakness(s, alphabet, b); why != "" {
		return nil, fmt.Errorf("does not look random: %s; %s", why, secretAdvice)
	}
	return b, nil
}

func decodeBase64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

// secretAdvice ends every error about a root secret that is not random.
const secretAdvice = "make one with: openssl rand -base64 32 (or head -c 32 /dev/urandom | base64)"
