package nmauth

import (
	"context"
	"crypto/hmac"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nmauth/nmauth/internal/keyed"
	"github.com/nmauth/nmauth/internal/names"
)

// accessTokenPrefix begins every access token (see [AccessToken]).
const accessTokenPrefix = "nmauth_at_"

const (
	// maxAccessTokenName bounds a token's label, in characters.
	maxAccessTokenName = 64
	// maxTokenNetworks bounds the networks of one token's scope.
	maxTokenNetworks = 64
	// touchEvery is how often at most a replica records a token's use.
	touchEvery = time.Minute
)

// errNoAccessToken is an access-token id that names no token; 404 over
// HTTP.
var errNoAccessToken = fmt.Errorf("%w: access token", ErrNotFound)

// requestError is a request whose content is wrong in a way the client
// can fix: 400 over HTTP, with its text as the message.
type requestError string

func (e requestError) Error() string { return "nmauth: " + string(e) }

// AccessTokenRequest describes an access token to create.
type AccessTokenRequest struct {
	// Name labels the token in lists: 1 to 64 printable characters.
	Name string
	// UserName is the user the token acts for.
	UserName string
	// ExpiresAt is when the token dies: in the future, and no later than
	// [Config.MaxAccessTokenTTL] from now. Zero means
	// [Config.AccessTokenTTL] from now.
	ExpiresAt time.Time
	// ReadOnly limits the token to reads: [Principal.Permits] refuses it
	// every request but GET, HEAD and OPTIONS.
	ReadOnly bool
	// Networks, when not empty, limits the token to routes of those
	// networks (see [Principal.Permits]).
	Networks []string
}

// listed is t as a caller sees it: without the Store's Digest and
// Generation.
func listed(t AccessToken) AccessToken {
	t.Digest, t.Generation = "", 0
	t.Networks, t.Broken = slices.Clone(t.Networks), slices.Clone(t.Broken)
	return t
}

// CreateAccessToken makes a personal access token for req.UserName, on
// behalf of p: the master key for any user, or the user itself with a
// user token. Another user, and an access token, get [ErrForbidden]: no
// token makes another, so none can widen its own scope. The token carries
// the user's current generation, so it dies with the user's other tokens
// when the user is disabled, deleted, or has its password changed or its
// tokens revoked. It returns the token as [Authenticator.ListAccessTokens]
// lists it, and the bearer credential, which is shown this once and never
// again.
func (a *Authenticator) CreateAccessToken(ctx context.Context, p Principal, req AccessTokenRequest) (AccessToken, string, error) {
	if a.access == nil {
		return AccessToken{}, "", ErrAccessTokensOff
	}
	name, err := PrepareUsername(req.UserName)
	if err != nil {
		return AccessToken{}, "", err
	}
	if !p.IsMaster() && (p.Kind != KindUser || p.Name != name) {
		return AccessToken{}, "", ErrForbidden
	}
	now := a.now()
	t, err := a.newAccessTokenRecord(req, now)
	if err != nil {
		return AccessToken{}, "", err
	}
	t.UserName, t.CreatedBy = name, p.Name
	u, err := a.store.GetUser(ctx, name)
	if err != nil {
		return AccessToken{}, "", err
	}
	if u.Disabled {
		return AccessToken{}, "", ErrForbidden
	}
	t.Generation = u.State.v.Generation
	token, err := a.mintAccessToken(&t)
	if err != nil {
		return AccessToken{}, "", err
	}
	if err := a.access.CreateAccessToken(ctx, t, a.cfg.MaxAccessTokens); err != nil {
		return AccessToken{}, "", err
	}
	a.emit(ctx, Event{Type: EventAccessTokenCreated, Kind: KindUser, Name: name, TokenID: t.ID, ActorKind: p.Kind, Actor: p.Name})
	return listed(t), token, nil
}

// newAccessTokenRecord checks req's name, expiry and scope, and returns
// the record they make.
func (a *Authenticator) newAccessTokenRecord(req AccessTokenRequest, now time.Time) (AccessToken, error) {
	if !validLabel(req.Name) {
		return AccessToken{}, requestError("name must be 1 to 64 printable characters")
	}
	expires := req.ExpiresAt
	if expires.IsZero() {
		expires = now.Add(a.cfg.AccessTokenTTL)
	}
	if !expires.After(now.Add(time.Minute)) || expires.After(now.Add(a.cfg.MaxAccessTokenTTL)) {
		return AccessToken{}, requestError(fmt.Sprintf("expires_at must be between a minute and %s from now", a.cfg.MaxAccessTokenTTL))
	}
	networks, err := scopeNetworks(req.Networks)
	if err != nil {
		return AccessToken{}, err
	}
	return AccessToken{
		Name: req.Name, ReadOnly: req.ReadOnly, Networks: networks,
		CreatedAt: now, ExpiresAt: expires.Truncate(time.Second),
	}, nil
}

// validLabel reports whether s is 1 to 64 printable characters.
func validLabel(s string) bool {
	n := utf8.RuneCountInString(s)
	return n > 0 && n <= maxAccessTokenName && utf8.ValidString(s) &&
		!strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) })
}

// scopeNetworks checks the networks of a token's or a key's scope and
// returns them sorted, each once.
func scopeNetworks(networks []string) ([]string, error) {
	if len(networks) > maxTokenNetworks {
		return nil, requestError("too many networks")
	}
	for _, n := range networks {
		if !names.Network(n) {
			return nil, ErrInvalidNetwork
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(networks))), nil
}

// mintAccessToken draws t's id and secret, sets its digest, and returns
// the token.
func (a *Authenticator) mintAccessToken(t *AccessToken) (string, error) {
	id, digest, token, err := a.mintKeyedSecret(accessTokenPrefix, accessDigestName)
	if err != nil {
		return "", fmt.Errorf("nmauth: access token: %w", err)
	}
	t.ID, t.Digest = id, digest
	return token, nil
}

// mintKeyedSecret draws the id and secret of a credential that is kept
// only as a keyed digest (an access token, an enrollment key): it returns
// the id, the digest of the secret bound to digestName(id), and the
// credential as its holder gives it (see internal/keyed).
func (a *Authenticator) mintKeyedSecret(prefix string, digestName func(id string) string) (id, digest, token string, err error) {
	id, secret, err := keyed.Draw(a.cfg.Rand)
	if err != nil {
		return "", "", "", err
	}
	k := a.ring.Signer()
	mac := k.MachineMAC(digestName(id), secret)
	return id, machineDigest(k, mac), keyed.Format(prefix, id, secret, mac[:]), nil
}

// keyedCheck checks a keyed credential's check against every root secret,
// one keyed hash for each, and returns the root secret's key that made it
// with the secret's MAC under that key, or nil when none did.
func (a *Authenticator) keyedCheck(name, secret string, check []byte) (key *ringKey, mac [32]byte) {
	for _, k := range a.ring.Keys {
		m := k.MachineMAC(name, secret)
		if hmac.Equal(m[:keyed.CheckBytes], check) {
			key, mac = k, m
		}
	}
	return key, mac
}

// accessDigestName is what an access token's digest is bound to: its id,
// in a namespace of its own, so that no host's digest is ever one.
func accessDigestName(id string) string { return "access token " + id }

// parseAccessToken checks an access token: its check against every root
// secret, then its digest in the Store. It returns the token's principal.
func (a *Authenticator) parseAccessToken(ctx context.Context, credential string, now time.Time) (Principal, error) {
	id, secret, check, ok := keyed.Split(accessTokenPrefix, credential)
	if !ok || a.access == nil {
		return Principal{}, ErrUnauthenticated
	}
	if k, _ := a.keyedCheck(accessDigestName(id), secret, check); k == nil {
		return Principal{}, ErrUnauthenticated
	}
	t, err := a.access.GetAccessToken(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Principal{}, ErrUnauthenticated
	}
	if err != nil {
		return Principal{}, err
	}
	ok, _, err = a.ring.CheckMachineSecret(t.Digest, accessDigestName(id), secret)
	if err != nil {
		return Principal{}, a.dataFault(err, t.UserName)
	}
	if !ok || !now.Before(t.ExpiresAt) {
		return Principal{}, ErrUnauthenticated
	}
	return Principal{
		Kind:       KindAccessToken,
		Name:       t.UserName,
		TokenID:    t.ID,
		ReadOnly:   t.ReadOnly,
		IssuedAt:   t.CreatedAt,
		ExpiresAt:  t.ExpiresAt,
		networks:   newNetworkScope(t.Networks),
		generation: generationClaim{Value: t.Generation, Present: true},
	}, nil
}

// noteUse records that an access token was used, at most once every
// touchEvery by this replica, off the request's path: a check never waits
// for a write.
func (a *Authenticator) noteUse(r *accountRef[accountStatus], now time.Time) {
	last := r.Touched.Load()
	if now.UnixNano()-last < int64(touchEvery) || !r.Touched.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), a.cfg.StoreTimeout)
		defer cancel()
		if err := a.access.TouchAccessToken(ctx, r.Key.name, now.Truncate(time.Second)); err != nil {
			a.log.Debug("nmauth: recording an access token's use", "err", err)
		}
	}()
}

// ListAccessTokens lists userName's live access tokens, without their
// secrets, for p: the master key, the user, or one of the user's access tokens.
func (a *Authenticator) ListAccessTokens(ctx context.Context, p Principal, userName string) ([]AccessToken, error) {
	if a.access == nil {
		return nil, ErrAccessTokensOff
	}
	name, err := PrepareUsername(userName)
	if err != nil {
		return nil, err
	}
	if !p.IsMaster() && !(p.actsFor(name)) {
		return nil, ErrForbidden
	}
	ts, err := a.access.ListAccessTokens(ctx, name)
	if err != nil {
		return nil, err
	}
	// A token revoked by a move of the user's generation, or expired, is
	// dead: it is not listed, and the next creation deletes it. A user
	// whose own record is broken has its tokens listed by expiry alone.
	u, err := a.store.GetUser(ctx, name)
	switch {
	case errors.Is(err, ErrNotFound):
		return []AccessToken{}, nil
	case errors.Is(err, ErrBrokenRecord):
	case err != nil:
		return nil, err
	}
	now := a.now()
	out := make([]AccessToken, 0, len(ts))
	for _, t := range ts {
		revoked := err == nil && t.Generation != u.State.v.Generation
		// A broken token is listed, marked, whatever its generation and
		// expiry read as, so that it is seen and repaired.
		if t.Broken != nil || !revoked && now.Before(t.ExpiresAt) {
			out = append(out, listed(t))
		}
	}
	return out, nil
}

// actsFor reports whether p is a user token or access token of name.
func (p Principal) actsFor(name string) bool {
	return (p.Kind == KindUser || p.Kind == KindAccessToken) && p.Name == name
}

// mayRevoke reports whether p may revoke the access token id of name: the
// master key and the user's own login may revoke any; an access token that
// is not read-only only itself, so that a token scoped to a network or
// leaked from one job cannot end its user's others. id "" stands for all
// of the user's tokens.
func (p Principal) mayRevoke(name, id string) bool {
	switch p.Kind {
	case KindMaster:
		return true
	case KindUser:
		return p.Name == name
	case KindAccessToken:
		return p.Name == name && !p.ReadOnly && id != "" && p.TokenID == id
	}
	return false
}

// DeleteAccessToken revokes the access token id on behalf of p: the
// master key, its user's login, or the token itself when it is not
// read-only. Every replica refuses the token once its status cache reads
// the Store again ([Config.StatusCacheTTL]); this one at once. An unknown
// id is [ErrNotFound].
func (a *Authenticator) DeleteAccessToken(ctx context.Context, p Principal, id string) error {
	if a.access == nil {
		return ErrAccessTokensOff
	}
	t, err := a.access.GetAccessToken(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return errNoAccessToken
	}
	if err != nil {
		return err
	}
	if !p.mayRevoke(t.UserName, t.ID) {
		return ErrForbidden
	}
	if err := a.access.DeleteAccessToken(ctx, id); err != nil {
		return err
	}
	a.forget(KindAccessToken, id)
	a.emit(ctx, Event{Type: EventAccessTokenRevoked, Kind: KindUser, Name: t.UserName, TokenID: t.ID, ActorKind: p.Kind, Actor: p.Name})
	return nil
}

// DeleteAccessTokens revokes every access token of userName on behalf of
// p: the master key or the user's own login, never an access token.
func (a *Authenticator) DeleteAccessTokens(ctx context.Context, p Principal, userName string) error {
	if a.access == nil {
		return ErrAccessTokensOff
	}
	name, err := PrepareUsername(userName)
	if err != nil {
		return err
	}
	if !p.mayRevoke(name, "") {
		return ErrForbidden
	}
	// The event names p as who revoked them.
	return a.deleteUserAccessTokens(newContext(ctx, p), name)
}

// deleteUserAccessTokens deletes name's access tokens and makes this
// replica refuse them at once.
func (a *Authenticator) deleteUserAccessTokens(ctx context.Context, name string) error {
	if a.access == nil {
		return nil
	}
	ts, err := a.access.ListAccessTokens(ctx, name)
	if err != nil {
		return err
	}
	if err := a.access.DeleteUserAccessTokens(ctx, name); err != nil {
		return err
	}
	for _, t := range ts {
		a.forget(KindAccessToken, t.ID)
	}
	if len(ts) > 0 {
		a.emit(ctx, Event{Type: EventAccessTokenRevoked, Kind: KindUser, Name: name})
	}
	return nil
}
