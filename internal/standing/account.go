package standing

import "slices"

// Account is what the bearer check needs to know of an account's
// standing.
type Account struct {
	Active     bool
	Generation uint64
	// LoggedOut holds the ids of the account's tokens revoked by a logout
	// that have not expired yet.
	LoggedOut []string
}

// Admits reports whether an account in this standing accepts a token
// with this id minted under generation gen, present when the token bears
// a generation at all: one minted under the account's current
// generation and not logged out.
func (a *Account) Admits(present bool, gen uint64, tokenID string) bool {
	return a.Active && present && gen == a.Generation &&
		(len(a.LoggedOut) == 0 || !slices.Contains(a.LoggedOut, tokenID))
}
