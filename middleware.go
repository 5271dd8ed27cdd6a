// This file owns the bearer middleware: [Authenticator.Middleware] and
// [Authenticator.Require], the context of a request that passed the bearer
// check, and [BearerToken], which finds the credential in the header with
// internal/bearer.

package nmauth

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/nmauth/nmauth/internal/bearer"
	"github.com/nmauth/nmauth/internal/clientaddr"
	"github.com/nmauth/nmauth/internal/reqctx"
)

// Middleware lets a request through only with a valid bearer credential
// (see [Authenticator.CheckBearer]) and puts its [Principal] in the
// request context. Others get 401; a wrong credential, neither the master
// key nor a token this Authenticator issued (an expired one it issued is
// no guess), costs the client an attempt of its limit
// ([Config.ClientRate]), and a client that wrong credentials put past it
// gets 429 with Retry-After, for a right credential too, until the limit
// lets it try again. Unless [Authenticator.Limit] already
// did, it names the client address in the context, for the events of the
// check. To admit only some kinds of principal, use
// [Authenticator.Require] instead.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, _, err := a.authenticate(r)
		if err != nil {
			a.WriteError(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authenticate checks r's bearer credential and returns r with the
// [Principal] and the client address in its context, and the
// principal's kind.
func (a *Authenticator) authenticate(r *http.Request) (*http.Request, PrincipalKind, error) {
	g := new(guardedRequest)
	ctx := &g.ctx
	ctx.Context = r.Context()
	if len(a.cfg.TrustedProxies) == 0 {
		ctx.client.SetRemote(r.RemoteAddr)
	} else if _, ok := clientaddr.FromContext(ctx.Context); !ok {
		ctx.client.Name(clientaddr.Forwarded(r, clientaddr.Peer(r.RemoteAddr), a.cfg.TrustedProxies))
	}
	cred, err := BearerToken(r.Header)
	if err == nil {
		var p Principal
		var hit bool
		if ctx.p, hit, err = a.checkBearer(ctx, cred, &p); err == nil && !hit {
			ctx.p = extPrincipal(&p)
		}
		if err != nil || a.clients.Buckets.WrongSeen() {
			err = a.limitBearer(ctx, err)
		}
	}
	ctx.checked = err == nil
	// WithContext's copy does not outlive this line, so it stays on the
	// stack: the request and its context are one allocation.
	g.req = *r.WithContext(ctx)
	if err != nil {
		return &g.req, "", err
	}
	return &g.req, cachedKind(&ctx.p), nil
}

// guardedRequest is the request [Authenticator.authenticate] hands on,
// with its context, in one allocation.
type guardedRequest struct {
	ctx bearerContext
	req http.Request
}

// bearerContext is the context of a request that went through the bearer
// check: in one value, the [Principal] once the check passed, kept as the
// token cache keeps it, and the client address when no caller named one
// (see [reqctx.Client]): a request that only passes the check neither
// parses the connection's address nor looks for another.
type bearerContext struct {
	context.Context
	p       compactPrincipal
	checked bool
	client  reqctx.Client
}

func (c *bearerContext) Value(key any) any {
	switch key.(type) {
	case principalKey:
		if c.checked {
			return c
		}
	case clientaddr.ContextKey:
		if v, ok := c.client.Value(c.Context, key); ok {
			return v
		}
	}
	return c.Context.Value(key)
}

// Require returns a middleware that lets a request through only with a
// valid bearer credential of one of kinds, in one step: it checks the
// bearer as [Authenticator.Middleware] does and puts the [Principal] in
// the request context, so it needs no Middleware before it:
//
//	usersOnly := auth.Require(nmauth.KindUser, nmauth.KindMaster)
//	mux.Handle("DELETE /api/networks/{network}", usersOnly(deleteNetwork))
//
// A request without a valid credential gets 401 ([ErrUnauthenticated]); a
// valid credential of another kind gets 403 ([ErrForbidden]), since it is
// no wrong credential; a Store fault during the check gets 503. Each
// answer is the active profile's envelope. Behind Middleware or another
// Require, the Principal already in the context is taken as it is, and the
// bearer is not checked twice.
//
// Require panics when kinds is empty or holds a kind other than
// [KindMaster], [KindUser], [KindHost], [KindNode] and [KindAccessToken]
// (which [KindUser] does not admit: an application names it where access
// tokens belong): a guard that
// admits nobody is a mistake to see at setup, not at the first request.
func (a *Authenticator) Require(kinds ...PrincipalKind) func(http.Handler) http.Handler {
	if len(kinds) == 0 {
		panic("nmauth: Require needs at least one PrincipalKind; Middleware admits every kind")
	}
	for _, k := range kinds {
		if !slices.Contains([]PrincipalKind{KindMaster, KindUser, KindHost, KindNode, KindAccessToken}, k) {
			panic(fmt.Sprintf("nmauth: Require: unknown PrincipalKind %q", k))
		}
	}
	allowed := slices.Clone(kinds)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			kind, ok := kindFromContext(r.Context())
			if !ok {
				var err error
				if r, kind, err = a.authenticate(r); err != nil {
					a.WriteError(w, r, err)
					return
				}
			}
			if !slices.Contains(allowed, kind) {
				a.WriteError(w, r, ErrForbidden)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// BearerToken finds the credential in the Authorization header. There must
// be exactly one such header, of the form "Bearer <credential>" with the
// scheme in any case, and one credential of visible ASCII without spaces.
func BearerToken(h http.Header) (string, error) {
	if cred, ok := bearer.Credential(h); ok {
		return cred, nil
	}
	return "", ErrUnauthenticated
}
