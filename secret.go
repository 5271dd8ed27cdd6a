package nmauth

import (
	"fmt"

	"github.com/nmauth/nmauth/internal/rootkey"
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
	secrets, err := secret.ParseRoot(s, rootkey.MinSecretLen)
	if err != nil {
		return nil, fmt.Errorf("nmauth: %w", err)
	}
	return secrets, nil
}
