package clientaddr

import (
	"context"
	"net/netip"
)

// ContextKey is the key under which a context names the client address
// of a request or a login. Its value is a *netip.Addr into the context
// that holds it, which nobody changes once the context is made, or a
// netip.Addr.
type ContextKey struct{}

// NewContext returns a copy of ctx naming addr as the client address.
func NewContext(ctx context.Context, addr netip.Addr) context.Context {
	return &addrCtx{Context: ctx, addr: addr}
}

// addrCtx is the context NewContext makes: in one allocation, for the
// value under ContextKey is a pointer to its own addr.
type addrCtx struct {
	context.Context
	addr netip.Addr
}

func (c *addrCtx) Value(key any) any {
	if key == (ContextKey{}) {
		return &c.addr
	}
	return c.Context.Value(key)
}

// FromContext is the client address ctx names under ContextKey, and
// whether it names one.
func FromContext(ctx context.Context) (netip.Addr, bool) {
	switch v := ctx.Value(ContextKey{}).(type) {
	case *netip.Addr:
		return *v, true
	case netip.Addr:
		return v, true
	}
	return netip.Addr{}, false
}

// Counted is the client address of ctx as attempts are counted: the
// address, an IPv6 one as its /64; the invalid address when ctx names
// none.
func Counted(ctx context.Context) netip.Addr {
	addr, ok := FromContext(ctx)
	if !ok || !addr.IsValid() {
		return netip.Addr{}
	}
	addr = addr.Unmap()
	if addr.Is6() {
		addr = netip.PrefixFrom(addr, 64).Masked().Addr()
	}
	return addr
}
