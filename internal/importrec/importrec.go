// Package importrec checks what of an import's records needs no Store: a
// TOTP secret as another system exported it, and the records that would
// be one account once their names are prepared. It knows nothing of the
// Authenticator or its accounts: its caller prepares the names and says
// what a refused record is.
package importrec

import (
	"encoding/base32"
	"strings"
)

// TOTPSecret decodes a base32 TOTP secret, with or without padding,
// spaces or lower case; "" is none. RFC 4226 asks for 128 bits at least
// and 160 ideally; 80, the least an authenticator app takes, is accepted
// so that no imported user loses the factor. It reports false for
// anything but 80 to 512 bits of base32.
func TOTPSecret(s string) ([]byte, bool) {
	if s == "" {
		return nil, true
	}
	text := strings.ToUpper(strings.TrimRight(strings.ReplaceAll(s, " ", ""), "="))
	secret, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(text)
	if err != nil || len(secret) < 10 || len(secret) > 64 {
		return nil, false
	}
	return secret, true
}

// Conflicts returns the groups of two or more indexes into names whose
// names prepare to one, each in the order given, and the groups in the
// order of their first record. A name that prepare refuses is in no
// group.
func Conflicts(names []string, prepare func(string) (string, error)) [][]int {
	groups := map[string]int{} // prepared name: index in all
	var all [][]int
	for i, name := range names {
		p, err := prepare(name)
		if err != nil {
			continue
		}
		g, seen := groups[p]
		if !seen {
			g = len(all)
			groups[p] = g
			all = append(all, nil)
		}
		all[g] = append(all[g], i)
	}
	conflicts := all[:0]
	for _, c := range all {
		if len(c) > 1 {
			conflicts = append(conflicts, c)
		}
	}
	return conflicts
}
