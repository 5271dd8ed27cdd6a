package secret

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// ParseRoot reads root secrets from text: one secret, or a
// comma-separated list of them, each hex, or else standard or URL-safe
// base64 with or without padding, of at least minLen bytes once decoded,
// and random by [Weakness]; spaces and newlines around a secret are
// ignored. A string of hex digits is always read as hex, so that a short
// or mistyped hex secret never passes for a long base64 one. An error
// names the position of a bad secret, never its content.
func ParseRoot(s string, minLen int) ([][]byte, error) {
	fields := strings.Split(s, ",")
	secrets := make([][]byte, 0, len(fields))
	for i, field := range fields {
		b, err := decodeRoot(field, minLen)
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

// decodeRoot reads one secret of [ParseRoot].
func decodeRoot(s string, minLen int) ([]byte, error) {
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
	if len(b) < minLen {
		return nil, fmt.Errorf("%d bytes, need at least %d", len(b), minLen)
	}
	if why := Weakness(s, alphabet, b); why != "" {
		return nil, fmt.Errorf("does not look random: %s; %s", why, rootAdvice)
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

// rootAdvice ends every error about a root secret that is not random.
const rootAdvice = "make one with: openssl rand -base64 32 (or head -c 32 /dev/urandom | base64)"
