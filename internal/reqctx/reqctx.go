// Package reqctx names the client of a request in the context nmauth's
// bearer check gives it: an address named up front, behind trusted
// proxies, or the connection's address, parsed only when something asks
// for it. It knows nothing of the Authenticator or its context keys: the
// context that holds a Client asks it under its own key.
package reqctx

import (
	"context"
	"net/netip"

	"github.com/nmauth/nmauth/internal/clientaddr"
)

// Client is the client address a request's context names. Its zero value
// names none.
type Client struct {
	// named is set when the context names addr.
	named bool
	// remote is the connection's address, when no proxy is trusted.
	remote string
	addr   netip.Addr
}

// Name makes c name addr.
func (c *Client) Name(addr netip.Addr) { c.named, c.addr = true, addr }

// SetRemote makes c name the client of the connection whose RemoteAddr is
// remote, unless the parent context names one.
func (c *Client) SetRemote(remote string) { c.remote = remote }

// Value is the value under key, the key of the client address, of the
// context that holds c and wraps parent: a *netip.Addr into c for an
// address named with [Client.Name]; else parent's value, if it has one;
// else, once [Client.SetRemote] was called, the connection's address as a
// netip.Addr, an IPv6 one by the first address of its /64. It reports
// false when c names no client, and the caller asks parent.
func (c *Client) Value(parent context.Context, key any) (any, bool) {
	if c.named {
		return &c.addr, true
	}
	if c.remote == "" {
		return nil, false
	}
	if v := parent.Value(key); v != nil {
		return v, true
	}
	addr := clientaddr.Peer(c.remote)
	if addr.Is6() {
		addr = netip.PrefixFrom(addr, 64).Masked().Addr()
	}
	return addr, true
}
