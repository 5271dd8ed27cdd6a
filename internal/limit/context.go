package limit

import (
	"context"
	"hash/maphash"
	"net/netip"
	"sync/atomic"

	"github.com/nmauth/nmauth/internal/clientaddr"
)

// Context is the context a limited request is served in. It names the
// client (under [clientaddr.ContextKey]), and when the request's attempt
// was counted (Counted), notes once the request proved a credential (see
// MarkProved), so that its attempt can be given back.
type Context struct {
	context.Context
	Client  netip.Addr
	Counted bool
	proved  atomic.Bool
	// provedFor is a hash of the account proved, when the proof named
	// one (see MarkProvedAccount).
	provedFor atomic.Uint64
}

// provedKey finds a request's Context.
type provedKey struct{}

func (c *Context) Value(key any) any {
	switch key.(type) {
	case clientaddr.ContextKey:
		return &c.Client
	case provedKey:
		if c.Counted {
			return c
		}
	}
	return c.Context.Value(key)
}

// Proved reports whether the request proved a credential, and the hash
// of the account it proved, 0 when the proof named none: the account
// argument of [Limiter.GiveBack].
func (c *Context) Proved() (bool, uint64) { return c.proved.Load(), c.provedFor.Load() }

// Counted reports whether ctx is that of a request whose attempt a
// Context counted.
func Counted(ctx context.Context) bool { return ctx.Value(provedKey{}) != nil }

// MarkProved notes that the request of ctx proved a credential, if its
// attempt was counted.
func MarkProved(ctx context.Context) {
	if c, ok := ctx.Value(provedKey{}).(*Context); ok {
		c.proved.Store(true)
	}
}

// provedAccountSeed keys the hashes of accounts for GiveBack.
var provedAccountSeed = maphash.MakeSeed()

// MarkProvedAccount is MarkProved for a login of the account of kind and
// name: its attempt is given back only once per account and address in
// a minute (see [Limiter.GiveBack]).
func MarkProvedAccount(ctx context.Context, kind, name string) {
	if c, ok := ctx.Value(provedKey{}).(*Context); ok {
		var h maphash.Hash
		h.SetSeed(provedAccountSeed)
		h.WriteString(kind)
		h.WriteByte(0)
		h.WriteString(name)
		c.provedFor.Store(h.Sum64() | 1)
		c.proved.Store(true)
	}
}
