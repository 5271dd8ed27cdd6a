package nmauth

import (
	"crypto/sha256"
	"fmt"
	"testing"
)

// The token cache takes a token on its second check: the doorkeeper says
// no to a digest seen for the first time and yes to it the next time,
// until it has seen as many other digests as the cache holds.
func TestDoorkeeperAdmitsOnSecondSight(t *testing.T) {
	const size = 1000
	k := newDoorkeeper(size)
	digest := func(i int) *tokenDigest {
		d := tokenDigest(sha256.Sum256(fmt.Appendf(nil, "token-%d", i)))
		return &d
	}
	if k.admit(digest(0)) {
		t.Fatal("first sight admitted")
	}
	if !k.admit(digest(0)) {
		t.Fatal("second sight refused")
	}
	// size-1 more new digests make size additions: the doorkeeper clears.
	for i := 1; i < size; i++ {
		k.admit(digest(i))
	}
	if k.admit(digest(0)) {
		t.Fatal("a digest seen before the doorkeeper cleared was admitted")
	}
}
