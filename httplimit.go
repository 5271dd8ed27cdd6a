// This file owns [Authenticator.Limit], the per-client attempt limit of
// the login routes as a middleware, and the request context it gives: the
// client's address, and whether the request proved a credential.

package nmauth

import (
	"context"
	"net/http"
	"net/netip"
	"sync/atomic"
)

// Limit applies the per-client attempt limit of the login routes
// ([Config.ClientRate], [Config.ClientBurst]) to next: one limiter, shared
// with them, so a client's attempts count against one budget whichever
// route they go to. Past the limit it answers 429 with Retry-After and
// emits [EventClientThrottled]. An attempt is given back once answered
// only if the request proved a credential: if the Authenticator minted a
// token for a login within it, through a login method,
// [Authenticator.VerifyTOTP], [Extension.RedeemPreAuth],
// [Extension.LoginVerified], [Extension.Login] or
// [Authenticator.IssueNodeToken], called with the request's context. So a
// fleet behind one address is not slowed by its own logins, while each
// wrong guess, and each answer that proves nothing however it succeeds (a
// ceremony begun, a redirect to a provider), costs one attempt (see the
// "Behind a reverse proxy" in docs/nmauthd.md). It names the client address to
// next's request context (see [WithClientAddr]), taken from the
// connection or a trusted proxy's X-Forwarded-For
// ([Config.TrustedProxies]), so that the login methods count attempts per
// client and events name it. Wrap an application's own routes that check
// a secret, such as a node route that calls [Authenticator.IssueNodeToken]
// after checking a node key, and those that write anything for a caller
// who has proved nothing yet.
func (a *Authenticator) Limit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.serveLimited(w, r, next)
	})
}

// serveLimited serves r as [Authenticator.Limit] does. It is a method of
// its own, compiled once in this package, so that WithContext is inlined
// into it wherever Limit is inlined.
func (a *Authenticator) serveLimited(w http.ResponseWriter, r *http.Request, next http.Handler) {
	now := a.now()
	l := new(limitedRequest)
	ctx := &l.ctx
	ctx.Context = r.Context()
	ctx.client = a.clients.clientOf(r, now)
	b, d := a.clients.take(ctx.client, now)
	ctx.counted = b != nil
	// WithContext's copy does not outlive this line, so it stays on the
	// stack: the request and its context are one allocation.
	l.req = *r.WithContext(ctx)
	if d > 0 {
		a.emit(ctx, Event{Type: EventClientThrottled})
		a.WriteError(w, &l.req, &RetryError{Reason: ErrThrottled, RetryAfter: d})
		return
	}
	next.ServeHTTP(w, &l.req)
	if ctx.counted && ctx.proved.Load() {
		a.clients.giveBack(b, a.now(), ctx.provedFor.Load())
	}
}

// limitedRequest is the request [Authenticator.Limit] hands on, with its
// context, in one allocation.
type limitedRequest struct {
	ctx limitedCtx
	req http.Request
}

// limitedCtx is the context [Authenticator.Limit] gives a request: it
// names the client, and when Limit counted the request's attempt
// (counted), proved is set once the request proved a credential (see
// markProved).
type limitedCtx struct {
	context.Context
	client  netip.Addr
	counted bool
	proved  atomic.Bool
	// provedFor is a hash of the account proved, when the proof named
	// one (see markProvedAccount).
	provedFor atomic.Uint64
}

// provedKey finds a request's limitedCtx.
type provedKey struct{}

func (c *limitedCtx) Value(key any) any {
	switch key.(type) {
	case clientAddrKey:
		return &c.client
	case provedKey:
		if c.counted {
			return c
		}
	}
	return c.Context.Value(key)
}

// markProved notes that the request of ctx proved a credential, if
// [Authenticator.Limit] counted its attempt. Each method that mints a
// token for a login calls it once the token is minted; nothing else does.
func markProved(ctx context.Context) {
	if lc, ok := ctx.Value(provedKey{}).(*limitedCtx); ok {
		lc.proved.Store(true)
	}
}
