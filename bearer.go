package nmauth

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/nmauth/nmauth/internal/clientaddr"
	"github.com/nmauth/nmauth/internal/limit"
	"github.com/nmauth/nmauth/internal/standing"
)

// CheckBearer checks one bearer credential: the master key, a user, host
// or node token this Authenticator issued, or an access token it made
// ([Authenticator.CreateAccessToken]). A pre-auth token is refused here.
// A user or host token is refused once its account is deleted, disabled or
// revoked, or once it was logged out ([Authenticator.Logout]); an access
// token also once it is deleted.
func (a *Authenticator) CheckBearer(ctx context.Context, credential string) (Principal, error) {
	var p Principal
	c, hit, err := a.checkBearer(ctx, credential, &p)
	if err != nil {
		return Principal{}, err
	}
	if hit {
		return cachedPrincipal(&c), nil
	}
	return p, nil
}

// checkBearer is [Authenticator.CheckBearer]. A token in the cache comes
// back as the cache keeps its principal, with true, and builds no
// [Principal]; any other credential's principal is put in *p.
func (a *Authenticator) checkBearer(ctx context.Context, credential string, p *Principal) (compactPrincipal, bool, error) {
	if credential == "" {
		return compactPrincipal{}, false, ErrUnauthenticated
	}
	now := a.now()
	key, e, hit := a.tokens.get(credential)
	var account, token *accountRef[accountStatus]
	var expires time.Time
	if hit {
		account, token, expires = e.Account, cachedToken(&e.Principal), cachedExpiry(&e.Principal)
	} else {
		if a.cfg.MasterKey.Check(credential) {
			a.emit(ctx, Event{Type: EventMasterKeyUsed, Kind: KindMaster, Name: "master"})
			*p = Principal{Kind: KindMaster}
			return compactPrincipal{}, false, nil
		}
		var err error
		if *p, account, token, err = a.verifyToken(ctx, credential, now); err != nil {
			return compactPrincipal{}, false, err
		}
		a.tokens.put(key, credential, p, account, token, now)
		expires = p.ExpiresAt
	}
	// The status cache's hits are the token cache's, corrected here off
	// the path of a cached token that is checked (see [standing.Status.Counts]).
	reaches := account != nil && now.Before(expires)
	if hit && !reaches {
		a.status.Lost.Add(1)
	} else if !hit && reaches {
		a.status.Extra.Add(1)
	}
	if !now.Before(expires) {
		return compactPrincipal{}, false, ErrUnauthenticated
	}
	var held *compactPrincipal
	if hit {
		held, p = &e.Principal, nil
	}
	if err := a.checkStanding(ctx, p, held, account, token, now); err != nil {
		return compactPrincipal{}, false, err
	}
	return e.Principal, hit, nil
}

// verifyToken verifies a token the cache did not hold. It returns the
// token's principal, the place of the account whose standing decides it,
// and an access token's own place in the status cache.
func (a *Authenticator) verifyToken(ctx context.Context, credential string, now time.Time) (p Principal, account, token *accountRef[accountStatus], err error) {
	if strings.HasPrefix(credential, accessTokenPrefix) {
		p, err = a.parseAccessToken(ctx, credential, now)
	} else {
		p, err = a.parseBearer(credential)
	}
	if err != nil {
		if errors.Is(err, ErrUnauthenticated) && !errors.Is(err, jwt.ErrTokenExpired) {
			err = notIssuedError{err}
		}
		return Principal{}, nil, nil, err
	}
	account = a.status.Ref(accountOf(p))
	if p.Kind == KindAccessToken {
		token = a.status.Ref(&accountKey{kind: KindAccessToken, name: p.TokenID})
	}
	return p, account, token, nil
}

// notIssuedError is the error of a bearer credential that is neither the
// master key nor a token this Authenticator signed (an expired token it
// signed is no guess), nor an access token it holds: a wrong credential,
// which counts against the client's limit (see limitBearer). It wraps
// [ErrUnauthenticated].
type notIssuedError struct{ error }

func (e notIssuedError) Unwrap() error { return e.error }

// limitBearer applies the per-client limit ([Config.ClientRate],
// [Config.ClientBurst]) to the bearer check of the request of ctx, whose
// outcome is err: a wrong credential costs the client an attempt, and past
// its limit it gets [ErrThrottled] instead of 401. While wrong credentials
// may have put some client past its limit, a right one from such a client
// is refused alike, so that past its limit a client cannot tell a right
// guess from a wrong one; otherwise a right credential never reaches the
// limiter, and costs what it did. A request [Authenticator.Limit] counted
// is left to it.
func (a *Authenticator) limitBearer(ctx *bearerContext, err error) error {
	_, wrong := err.(notIssuedError)
	if err != nil && !wrong || limit.Counted(ctx.Context) {
		return err
	}
	client, _ := clientaddr.FromContext(ctx)
	now := a.now()
	var wait time.Duration
	if wrong {
		wait = a.clients.WrongBearer(client, now)
	} else {
		wait = a.clients.Buckets.Throttled(client, now)
	}
	if wait <= 0 {
		return err
	}
	a.emit(ctx, Event{Type: EventClientThrottled})
	return &RetryError{Reason: ErrThrottled, RetryAfter: wait}
}

func (a *Authenticator) parseBearer(token string) (Principal, error) {
	c, kind, err := a.bearer.Verify(token)
	if err != nil && a.minter.netmaker != nil {
		// A user or host token in Netmaker's format, which bears no kid.
		return a.minter.netmaker.verify(token)
	}
	if err != nil {
		return Principal{}, err
	}
	return Principal{
		Kind:       principalKinds[kind],
		Name:       c.Subject,
		Network:    c.Network,
		TOTP:       c.TOTP,
		IssuedAt:   c.IssuedAt.Time,
		ExpiresAt:  c.ExpiresAt.Time,
		TokenID:    c.ID,
		generation: c.Generation,
	}, nil
}

// accountOf names the account whose standing decides p's token: its user,
// or its host for a host token and for a node token minted by
// [Authenticator.LoginNode]; nil for a node token minted by
// [Authenticator.IssueNodeToken], which [Config.NodeTokenValid] decides.
func accountOf(p Principal) *accountKey {
	switch {
	case p.Kind == KindUser, p.Kind == KindAccessToken:
		return &accountKey{kind: KindUser, name: p.Name}
	case p.Kind == KindHost, p.Kind == KindNode && p.generation.Present:
		return &accountKey{kind: KindHost, name: p.Name}
	}
	return nil
}

// checkStanding refuses a token whose user or host is gone, disabled, or
// at another generation than the one the token was minted under, a token
// logged out, and an access token deleted. A node
// token minted by [Authenticator.LoginNode] stands or falls with its host;
// one minted by [Authenticator.IssueNodeToken] by [Config.NodeTokenValid].
// The token's principal is p, or, for a cache hit, held (p then nil).
func (a *Authenticator) checkStanding(ctx context.Context, p *Principal, held *compactPrincipal, account, token *accountRef[accountStatus], now time.Time) error {
	if account == nil {
		if held != nil {
			if cachedKind(held) != KindNode || a.cfg.NodeTokenValid == nil {
				return nil
			}
			whole := cachedPrincipal(held)
			p = &whole
		}
		if p.Kind == KindNode && a.cfg.NodeTokenValid != nil {
			return a.checkNodeToken(ctx, *p)
		}
		return nil
	}
	st, err := a.status.Standing(ctx, account, now)
	if err != nil {
		return err
	}
	var gen generationClaim
	var tokenID string
	if held != nil {
		gen, tokenID = cachedStanding(held)
	} else {
		gen, tokenID = p.generation, p.TokenID
	}
	if !st.Admits(gen.Present, gen.Value, tokenID) {
		return ErrUnauthenticated
	}
	if token == nil {
		return nil
	}
	// A second call of standing, which the token cache's hits leave out.
	a.status.Extra.Add(1)
	if st, err = a.status.Standing(ctx, token, now); err != nil {
		return err
	}
	if !st.Active {
		return ErrUnauthenticated
	}
	a.noteUse(token, now)
	return nil
}

// checkNodeToken asks [Config.NodeTokenValid] about a node token from
// [Authenticator.IssueNodeToken].
func (a *Authenticator) checkNodeToken(ctx context.Context, p Principal) error {
	ok, err := a.guard.g.Ask(ctx, "node token check", func(ctx context.Context) (bool, error) { return a.cfg.NodeTokenValid(ctx, p) })
	if err != nil {
		return err
	}
	if !ok {
		return ErrUnauthenticated
	}
	return nil
}

// accountStatus is what the bearer check needs to know of an account. It
// is built in loadStatus and read in checkStanding only.
type accountStatus = standing.Account

// loadStatus returns the function that reads an account's standing from s,
// or an access token's (active while it is stored) from tokens. A missing
// account or token is one in no standing, not an error.
func loadStatus(s Store, tokens AccessTokenStore) func(context.Context, accountKey) (accountStatus, error) {
	return func(ctx context.Context, k accountKey) (accountStatus, error) {
		var st accountStatus
		var err error
		switch k.kind {
		case KindUser:
			var u User
			u, err = s.GetUser(ctx, k.name)
			st = accountStatus{Active: !u.Disabled, Generation: u.State.v.Generation, LoggedOut: loggedOutIDs(u.State.v.LoggedOut)}
		case KindAccessToken:
			if tokens == nil {
				return st, nil
			}
			_, err = tokens.GetAccessToken(ctx, k.name)
			st.Active = err == nil
		case KindHost:
			var h Host
			h, err = s.GetHost(ctx, k.name)
			st = accountStatus{Active: !h.Disabled, Generation: h.State.v.Generation}
		}
		if errors.Is(err, ErrNotFound) {
			return accountStatus{}, nil
		}
		return st, err
	}
}

// accountKey names one user or host.
type accountKey struct {
	kind PrincipalKind
	name string
}

// accountRef is the status cache's place for one account (see
// [standing.Ref]); its Login is the host's cached machine credential (see
// hostCredential).
type accountRef[V any] = standing.Ref[accountKey, V, hostCredential]

// statusCache keeps what the bearer check read of each account's standing
// for a short time (see [standing.Status]).
type statusCache = standing.Status[accountKey, accountStatus, hostCredential]

// newStatusCache returns a cache that keeps up to size accounts for up to
// ttl each, loading them with load; a negative ttl or size keeps none.
func newStatusCache(ttl time.Duration, size int, load func(context.Context, accountKey) (accountStatus, error)) *statusCache {
	return standing.NewStatus[accountKey, accountStatus, hostCredential](ttl, size, func(k accountKey) string { return k.name }, load)
}

// forget makes the status cache read the standing of the account kind
// name from the Store again, after a change made through this
// Authenticator; a read already under way when it is called is not kept.
func (a *Authenticator) forget(kind PrincipalKind, name string) {
	a.status.Forget(accountKey{kind: kind, name: name})
}
