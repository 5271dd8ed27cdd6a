package clientaddr

import (
	"context"
	"net/netip"
	"testing"
)

// valueCtx names the client as a netip.Addr, not a pointer to one.
type valueCtx struct {
	context.Context
	addr netip.Addr
}

func (c valueCtx) Value(key any) any {
	if key == (ContextKey{}) {
		return c.addr
	}
	return c.Context.Value(key)
}

func TestFromContext(t *testing.T) {
	bg := context.Background()
	if addr, ok := FromContext(bg); ok || addr.IsValid() {
		t.Fatalf("a bare context names %v, %v", addr, ok)
	}
	a := netip.MustParseAddr("192.0.2.7")
	if got, ok := FromContext(NewContext(bg, a)); !ok || got != a {
		t.Fatalf("NewContext named %v, %v; want %v", got, ok, a)
	}
	if got, ok := FromContext(valueCtx{bg, a}); !ok || got != a {
		t.Fatalf("a netip.Addr value named %v, %v; want %v", got, ok, a)
	}
	inner := NewContext(bg, a)
	outer := NewContext(inner, netip.MustParseAddr("198.51.100.1"))
	if got, _ := FromContext(inner); got != a {
		t.Fatalf("a later NewContext changed the earlier context's address to %v", got)
	}
	if got, _ := FromContext(outer); got != netip.MustParseAddr("198.51.100.1") {
		t.Fatalf("the outer context names %v", got)
	}
	type otherKey struct{}
	ctx := NewContext(context.WithValue(bg, otherKey{}, "v"), a)
	if ctx.Value(otherKey{}) != "v" {
		t.Fatal("NewContext hides the values of the context it wraps")
	}
}

func TestCounted(t *testing.T) {
	bg := context.Background()
	for _, tc := range []struct {
		ctx  context.Context
		want netip.Addr
	}{
		{bg, netip.Addr{}},
		{NewContext(bg, netip.Addr{}), netip.Addr{}},
		{NewContext(bg, netip.MustParseAddr("192.0.2.7")), netip.MustParseAddr("192.0.2.7")},
		{NewContext(bg, netip.MustParseAddr("::ffff:192.0.2.7")), netip.MustParseAddr("192.0.2.7")},
		{NewContext(bg, netip.MustParseAddr("2001:db8:1:2:3:4:5:6")), netip.MustParseAddr("2001:db8:1:2::")},
	} {
		if got := Counted(tc.ctx); got != tc.want {
			t.Errorf("Counted(%v) = %v, want %v", tc.ctx.Value(ContextKey{}), got, tc.want)
		}
	}
}
