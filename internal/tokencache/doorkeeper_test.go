package tokencache

import (
	"fmt"
	"hash/maphash"
	"testing"
)

// The token cache takes a token on its second check: the doorkeeper says
// no to a digest seen for the first time and yes to it the next time,
// until it has seen as many other digests as the cache holds.
func TestDoorkeeperAdmitsOnSecondSight(t *testing.T) {
	const size = 1000
	k := newDoorkeeper(size)
	seed := maphash.MakeSeed()
	digest := func(i int) uint64 { return maphash.String(seed, fmt.Sprintf("token-%d", i)) }
	if k.admit(digest(0)) {
		t.Fatal("first sight admitted")
	}
	if !k.admit(digest(0)) {
		t.Fatal("second sight refused")
	}
	// size additions clear it. A new digest whose bits happen to be set
	// already adds nothing (a false positive), so it may take a few more
	// than size-1 new digests.
	i := 1
	for ; i < 2*size && (i < size || k.added.Load() != 0); i++ {
		k.admit(digest(i))
	}
	if k.added.Load() != 0 {
		t.Fatalf("%d new digests did not clear the doorkeeper", i-1)
	}
	if k.admit(digest(0)) {
		t.Fatal("a digest seen before the doorkeeper cleared was admitted")
	}
}
