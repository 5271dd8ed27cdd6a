package limit

import (
	"context"
	"net/netip"
	"testing"

	"github.com/nmauth/nmauth/internal/clientaddr"
)

func TestContextNamesClient(t *testing.T) {
	addr := netip.MustParseAddr("192.0.2.9")
	c := &Context{Context: clientaddr.NewContext(context.Background(), netip.MustParseAddr("198.51.100.1")), Client: addr}
	if got, ok := clientaddr.FromContext(c); !ok || got != addr {
		t.Errorf("the context names %v, %v; want %v", got, ok, addr)
	}
}

// TestProof checks that a proof is noted only in a request whose attempt
// was counted, that a proof for an account names it by a hash that tells
// accounts apart, and that a context wrapping the request's finds it.
func TestProof(t *testing.T) {
	bg := context.Background()
	uncounted := &Context{Context: bg}
	MarkProved(uncounted)
	if Counted(uncounted) {
		t.Error("an uncounted request reports its attempt counted")
	}
	if proved, _ := uncounted.Proved(); proved {
		t.Error("an uncounted request noted a proof")
	}
	if Counted(bg) {
		t.Error("a bare context reports an attempt counted")
	}
	MarkProved(bg) // no request: nothing to note, and no panic

	plain := &Context{Context: bg, Counted: true}
	type key struct{}
	MarkProved(context.WithValue(plain, key{}, 1))
	if !Counted(plain) {
		t.Error("a counted request does not report so")
	}
	if proved, account := plain.Proved(); !proved || account != 0 {
		t.Errorf("plain proof: %v, %#x; want true, 0", proved, account)
	}

	hashOf := func(kind, name string) uint64 {
		c := &Context{Context: bg, Counted: true}
		MarkProvedAccount(c, kind, name)
		proved, account := c.Proved()
		if !proved || account == 0 {
			t.Fatalf("proof of %s %s: %v, %#x", kind, name, proved, account)
		}
		return account
	}
	if hashOf("user", "ann") != hashOf("user", "ann") {
		t.Error("one account hashes two ways")
	}
	if hashOf("user", "ann") == hashOf("host", "ann") || hashOf("user", "ann") == hashOf("user", "bob") {
		t.Error("two accounts share a hash")
	}
}
