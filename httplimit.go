// This file owns [Authenticator.Limit], the per-client attempt limit of
// the login routes as a middleware, and the request context it gives: the
// client's address, and whether the request proved a credential.

package nmauth

import (
	"context"
	"net/http"

	"github.com/nmauth/nmauth/internal/limit"
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
	ctx.Client = a.clients.ClientOf(r, now)
	b, d := a.clients.Take(ctx.Client, now)
	ctx.Counted = b != nil
	// WithContext's copy does not outlive this line, so it stays on the
	// stack: the request and its context are one allocation.
	l.req = *r.WithContext(ctx)
	if d > 0 {
		a.emit(ctx, Event{Type: EventClientThrottled})
		a.WriteError(w, &l.req, &RetryError{Reason: ErrThrottled, RetryAfter: d})
		return
	}
	next.ServeHTTP(w, &l.req)
	if proved, account := ctx.Proved(); ctx.Counted && proved {
		a.clients.Buckets.GiveBack(b, a.now(), account)
	}
}

// limitedRequest is the request [Authenticator.Limit] hands on, with its
// context, in one allocation.
type limitedRequest struct {
	ctx limit.Context
	req http.Request
}

// markProved notes that the request of ctx proved a credential, if
// [Authenticator.Limit] counted its attempt. Each method that mints a
// token for a login calls it once the token is minted; nothing else does.
func markProved(ctx context.Context) { limit.MarkProved(ctx) }

// markProvedAccount is [markProved] for a login of account: its attempt
// is given back only once per account and address in a minute (see
// [limit.Limiter.GiveBack]).
func markProvedAccount(ctx context.Context, account accountKey) {
	limit.MarkProvedAccount(ctx, string(account.kind), account.name)
}
