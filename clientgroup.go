package nmauth

import (
	"context"
	"net/netip"

	"github.com/nmauth/nmauth/internal/clientaddr"
	"github.com/nmauth/nmauth/internal/gate"
)

// ClientGroup is the client group of a request, as the login gates share
// their turns: the IPv4 /24 or IPv6 /56 of the client address that
// [Authenticator.Limit] or [WithClientAddr] named in ctx; the zero Prefix
// when ctx names none. An extension that bounds what each client may hold
// of something scarce (the pending logins of single sign-on, its
// websockets) shares it by this group, so that a client cannot escape its
// share by moving to a neighbouring address, nor the extension's grouping
// drift from the gates'. It needs no registration.
func (e *Extension) ClientGroup(ctx context.Context) netip.Prefix {
	return gate.ClientGroup(clientaddr.Counted(ctx))
}
