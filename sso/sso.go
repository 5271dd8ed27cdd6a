// Package sso logs nmauth users in through an OpenID Connect provider,
// with the authorization-code flow, PKCE, state and nonce, on the routes
// Netmaker's clients use:
//
//	GET /api/oauth/login     starts a browser login (the web UI's button)
//	GET /api/oauth/callback  the provider sends the browser back here
//	GET /api/oauth/headless  a websocket: nmctl context set --sso
//	POST /api/oauth/confirm  the person at the browser confirms a headless login
//
// An identity links to an nmauth user by its issuer and subject, which a
// provider keeps when the user's e-mail changes. The login it earns is the
// one a right password earns ([nmauth.Extension.Login]): a user
// token with the user's revocation, or, for a user with a second factor,
// a pre-auth token to redeem at verify-totp. It is a package of its own so
// that an application without single sign-on compiles none of its
// dependencies: coreos/go-oidc, which checks the provider's ID tokens
// (issuer, audience, expiry, signature by the provider's published keys),
// golang.org/x/oauth2 and coder/websocket.
package sso

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/nmauth/nmauth"
)

// Config sets up single sign-on with one provider.
type Config struct {
	// Extension is the capability, registered in the
	// [nmauth.Config.Extensions] of the Authenticator whose users log in,
	// through which the logins are issued and the audit events written.
	// Required, and registered before [New] or [Open] is called.
	Extension *nmauth.Extension
	// Store keeps the pending logins, so that any replica may take the
	// provider's callback and each state is used once, and the links of
	// identities to users. Required.
	Store Store
	// Issuer is the provider's issuer URL; its discovery document is read
	// at New, or in the background after Open.
	Issuer string
	// ClientID and ClientSecret are the client's at the provider. A
	// confidential client needs its secret; a public client, which has
	// none and proves its logins with PKCE alone, says so with
	// PublicClient.
	ClientID, ClientSecret string
	PublicClient           bool
	// RedirectURL is this server's callback as the provider knows it,
	// ending in /api/oauth/callback.
	RedirectURL string
	// Scopes asked besides openid; default email and profile.
	Scopes []string
	// CreateUsers makes an nmauth user at the first login of an identity
	// linked to none, named by its preferred_username or e-mail. Off by
	// default: an identity then logs in only once linked ([SSO.Link]).
	// A user of that name that exists already is never linked to it by
	// this: that would hand the account to whoever holds the name at the
	// provider.
	CreateUsers bool
	// FindUser, when set, names the existing user that an identity
	// linked to none belongs to, by what the application holds of its
	// users (such as the name another system keys them by, or the
	// subject it kept), or "" for none; it is asked before CreateUsers.
	// The identity logs in as that user each time FindUser names it; no
	// link is stored, so that what the application holds decides. An
	// error fails the login as a store fault does.
	FindUser func(ctx context.Context, id Identity) (string, error)
	// AllowedDomains, when not empty, admits only identities whose e-mail
	// the provider has verified and whose domain is one of these.
	AllowedDomains []string
	// RequiredGroup, when set, admits only identities whose GroupsClaim
	// holds it.
	RequiredGroup string
	// GroupsClaim names the claim of the groups; default "groups".
	GroupsClaim string
	// OnLogin, when set, sees every identity that passed the checks,
	// before its login is issued, so that an application can map its
	// groups to roles of its own; an error refuses the login (403).
	OnLogin func(ctx context.Context, id Identity) error
	// CompleteURL is where a browser goes once logged in, the login in the
	// URL's fragment (which no server or log sees): authToken and
	// userName, or preAuthToken and userName when a second factor is
	// asked. Default "/".
	CompleteURL string
	// PendingTTL bounds how long a login may take at the provider;
	// default 5 minutes. MaxHeadless bounds the headless logins that
	// wait at once on this replica; default 64. A client group (IPv4
	// /24, IPv6 /56) holds at most MaxHeadlessPerGroup of them, default
	// 8, and fewer as they fill (see docs/sso.md): past its share it gets
	// 429; when all are held, a group that holds none takes the place of
	// the oldest login of the group that holds the most.
	PendingTTL          time.Duration
	MaxHeadless         int
	MaxHeadlessPerGroup int
	// MaxPending bounds the logins, browser and headless, begun and not
	// back from the provider yet, across replicas; default 10,000. A
	// client group holds at most MaxPendingPerGroup of them, default 100,
	// and fewer as they fill: a group past its share gets 429 with
	// Retry-After. Once all are taken, a group that holds none takes the
	// place of the oldest login of the group that holds the most; it
	// gets 503 only when no group holds two.
	MaxPending         int
	MaxPendingPerGroup int
	// HTTPClient reaches the provider; default http.DefaultClient.
	HTTPClient *http.Client
	// Logger receives, after Open, one line each time the provider's
	// discovery changes from working to failing or back; default
	// slog.Default().
	Logger *slog.Logger
}

// Identity is what the provider said of a user, checked.
type Identity struct {
	Issuer, Subject string
	Email           string
	EmailVerified   bool
	Groups          []string
	// Claims are all the ID token's claims, and the userinfo's when the
	// ID token carried no e-mail.
	Claims map[string]any
	// UserName is the nmauth user the identity is linked to.
	UserName string
}

// SSO serves the routes of single sign-on.
type SSO struct {
	cfg      Config
	auth     *nmauth.Authenticator // the one that registered cfg.Extension
	headless sockets
	secure   bool // the redirect URL is https: the binding cookie is Secure
	// fullUntil is until when (Unix nanoseconds) logins are refused
	// without asking the Store, which last found no room: a flood of
	// begins then costs the Store nothing.
	fullUntil atomic.Int64
	// provider is nil until the discovery document has been read.
	provider atomic.Pointer[provider]
	// retryAt is when the next discovery runs, in Unix nanoseconds, for
	// the Retry-After of the routes meanwhile.
	retryAt atomic.Int64
}

// provider is what the discovery document gave.
type provider struct {
	oauth    oauth2.Config
	oidc     *oidc.Provider
	verifier *oidc.IDTokenVerifier
}

// fullMemory is how long logins are refused without asking the Store
// once it found no room.
const fullMemory = time.Second

// The errors of a callback: each a 4xx, and no token.
var (
	errState    = errors.New("sso: unknown, expired or used state")
	errBinding  = errors.New("sso: the login was started by another browser")
	errExchange = errors.New("sso: the provider refused the code")
	errIDToken  = errors.New("sso: the provider's ID token does not verify")
	errNonce    = errors.New("sso: the ID token's nonce is not the login's")
	errDomain   = errors.New("sso: the e-mail is not verified or not in an allowed domain")
	errGroup    = errors.New("sso: the identity lacks the required group")
	errNoLink   = errors.New("sso: no user is linked to this identity")
	errTaken    = errors.New("sso: a user of that name exists and is not linked to this identity")
	errRefused  = errors.New("sso: the login was refused")
)

// The waits between two discoveries of a provider that does not answer:
// the first, doubled at each failure up to the last. An attempt gives up
// after discoveryTimeout.
const (
	discoveryFirstRetry = 250 * time.Millisecond
	discoveryMaxRetry   = 30 * time.Second
	discoveryTimeout    = 10 * time.Second
)

// New reads the provider's discovery document and returns the routes; it
// fails when the provider does not answer. [Open] does not wait for it.
func New(ctx context.Context, cfg Config) (*SSO, error) {
	s, err := newSSO(cfg)
	if err != nil {
		return nil, err
	}
	p, err := s.discover(ctx)
	if err != nil {
		return nil, err
	}
	s.provider.Store(p)
	return s, nil
}

// Open returns the routes at once, without reaching the provider: its
// discovery document is read in the background, tried again with a
// growing wait (250 ms doubled up to 30 s) until it answers or ctx ends.
// Until then the routes answer 503 with Retry-After, and an application
// serves everything else. Config.Logger gets one line when discovery
// fails and one when it works. Only the configuration's errors are
// returned.
func Open(ctx context.Context, cfg Config) (*SSO, error) {
	s, err := newSSO(cfg)
	if err != nil {
		return nil, err
	}
	s.retryAt.Store(time.Now().Add(discoveryFirstRetry).UnixNano())
	go s.discoverUntilDone(ctx)
	return s, nil
}

// Ready reports whether the provider's discovery document has been read,
// so that the routes serve logins.
func (s *SSO) Ready() bool { return s.provider.Load() != nil }

func newSSO(cfg Config) (*SSO, error) {
	if cfg.Extension == nil || cfg.Store == nil || cfg.Issuer == "" || cfg.ClientID == "" || cfg.RedirectURL == "" {
		return nil, errors.New("sso: Extension, Store, Issuer, ClientID and RedirectURL are required")
	}
	auth := cfg.Extension.Authenticator()
	if auth == nil {
		return nil, fmt.Errorf("sso: Config.Extension: %w", nmauth.ErrNotRegistered)
	}
	switch {
	case cfg.ClientSecret == "" && !cfg.PublicClient:
		return nil, errors.New("sso: ClientSecret is empty: a confidential client needs it, and a public client (PKCE only) is said with PublicClient")
	case cfg.ClientSecret != "" && cfg.PublicClient:
		return nil, errors.New("sso: a public client has no ClientSecret")
	}
	if cfg.Scopes == nil {
		cfg.Scopes = []string{"email", "profile"}
	}
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = "groups"
	}
	if cfg.CompleteURL == "" {
		cfg.CompleteURL = "/"
	}
	if cfg.PendingTTL == 0 {
		cfg.PendingTTL = 5 * time.Minute
	}
	if cfg.MaxHeadless == 0 {
		cfg.MaxHeadless = 64
	}
	if cfg.MaxHeadlessPerGroup == 0 {
		cfg.MaxHeadlessPerGroup = 8
	}
	if cfg.MaxPending == 0 {
		cfg.MaxPending = 10000
	}
	if cfg.MaxPendingPerGroup == 0 {
		cfg.MaxPendingPerGroup = 100
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	redirect, err := url.Parse(cfg.RedirectURL)
	if err != nil {
		return nil, fmt.Errorf("sso: RedirectURL: %w", err)
	}
	s := &SSO{cfg: cfg, auth: auth, secure: redirect.Scheme == "https"}
	s.headless.total, s.headless.share = cfg.MaxHeadless, cfg.MaxHeadlessPerGroup
	return s, nil
}

// discover reads the provider's discovery document.
func (s *SSO) discover(ctx context.Context) (*provider, error) {
	if s.cfg.HTTPClient != nil {
		ctx = oidc.ClientContext(ctx, s.cfg.HTTPClient)
	}
	op, err := oidc.NewProvider(ctx, s.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("sso: discovery of %s: %w", s.cfg.Issuer, err)
	}
	endpoint := op.Endpoint()
	if s.cfg.PublicClient {
		// The client id goes in the form: there is no secret to send
		// with it in an Authorization header.
		endpoint.AuthStyle = oauth2.AuthStyleInParams
	}
	return &provider{
		oidc:     op,
		verifier: op.Verifier(&oidc.Config{ClientID: s.cfg.ClientID}),
		oauth: oauth2.Config{
			ClientID: s.cfg.ClientID, ClientSecret: s.cfg.ClientSecret, RedirectURL: s.cfg.RedirectURL,
			Endpoint: endpoint, Scopes: append([]string{oidc.ScopeOpenID}, s.cfg.Scopes...),
		},
	}, nil
}

// discoverUntilDone runs discovery until it works or ctx ends, logging
// the first failure and the success after it.
func (s *SSO) discoverUntilDone(ctx context.Context) {
	wait, failing := discoveryFirstRetry, false
	for {
		actx, cancel := context.WithTimeout(ctx, discoveryTimeout)
		p, err := s.discover(actx)
		cancel()
		if err == nil {
			s.provider.Store(p)
			s.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "sso: the provider's discovery works; single sign-on is on",
				slog.String("issuer", s.cfg.Issuer), slog.Bool("after_failure", failing))
			return
		}
		if ctx.Err() != nil {
			return
		}
		// A little jitter, so that replicas started together do not
		// retry together.
		next := wait + mathrand.N(wait/4+1)
		s.retryAt.Store(time.Now().Add(next).UnixNano())
		if !failing {
			failing = true
			s.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "sso: the provider's discovery fails; single sign-on answers 503 and discovery is retried in the background",
				slog.String("issuer", s.cfg.Issuer), slog.String("err", err.Error()))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(next):
		}
		wait = min(2*wait, discoveryMaxRetry)
	}
}

// errNoProvider is the answer of the routes before discovery has worked.
var errNoProvider = errors.New("sso: the identity provider has not answered yet")

// ready returns the provider, or answers 503 with Retry-After and nil.
func (s *SSO) ready(w http.ResponseWriter, r *http.Request) *provider {
	if p := s.provider.Load(); p != nil {
		return p
	}
	wait := max(time.Second, time.Until(time.Unix(0, s.retryAt.Load())))
	s.auth.WriteError(w, r, fmt.Errorf("%w: %w", errNoProvider,
		&nmauth.RetryError{Reason: nmauth.ErrStoreUnavailable, RetryAfter: wait}))
	return nil
}

// Handler serves the routes; mount it at /api/oauth/. They need no
// credential, so each is under the per-client attempt limit of the login
// routes ([nmauth.Authenticator.Limit]): a login begun costs one attempt,
// since it writes a pending login and proves nothing, and the attempt
// that issues the login's token is given back.
func (s *SSO) Handler() http.Handler {
	mux := http.NewServeMux()
	// Until discovery works, the routes answer 503 before the limit
	// counts anything: the provider's outage is no client's attempt.
	limit := func(h http.Handler) http.Handler {
		limited := s.auth.Limit(h)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if s.ready(w, r) != nil {
				limited.ServeHTTP(w, r)
			}
		})
	}
	mux.Handle("GET /api/oauth/login", limit(http.HandlerFunc(s.serveLogin)))
	mux.Handle("GET /api/oauth/callback", limit(http.HandlerFunc(s.serveCallback)))
	mux.Handle("GET /api/oauth/headless", limit(http.HandlerFunc(s.serveHeadless)))
	mux.Handle("POST /api/oauth/confirm", limit(http.HandlerFunc(s.serveConfirm)))
	return mux
}

// EventLinked is an identity linked to a user by [SSO.Link] or
// [LinkUser]: the event names the user, and who linked it (see
// [nmauth.Event]).
const EventLinked nmauth.EventType = "sso.linked"

// Link links an identity to an existing user, so that it logs in as that
// user. An identity links to one user; linking it again moves it.
func (s *SSO) Link(ctx context.Context, issuer, subject, username string) error {
	return LinkUser(ctx, s.cfg.Extension, s.cfg.Store, issuer, subject, username)
}

// LinkUser is [SSO.Link] for an administrator's tool that runs no single
// sign-on itself (nmauthd's "user sso-link"), over the users of the
// Authenticator that registered ext and the links of store. It emits
// [EventLinked] through ext.
func LinkUser(ctx context.Context, ext *nmauth.Extension, store Store, issuer, subject, username string) error {
	auth := ext.Authenticator()
	if auth == nil {
		return fmt.Errorf("sso: %w", nmauth.ErrNotRegistered)
	}
	info, err := auth.Admin().LookupUser(ctx, username)
	if err != nil {
		return err
	}
	if err := store.AddLink(ctx, issuer, subject, info.Name); err != nil {
		return err
	}
	ext.Emit(ctx, nmauth.Event{Type: EventLinked, Kind: nmauth.KindUser, Name: info.Name})
	return nil
}

// bindingCookie carries the random value that binds a browser login to
// the browser that started it.
const bindingCookie = "nmauth_sso"

// begin makes a pending login of the client group and returns the
// provider's URL for it; [ErrGroupShare] when the group holds its share,
// [ErrPendingFull] when the Store has no room, or had none within the
// last fullMemory.
func (s *SSO) begin(ctx context.Context, op *provider, binding string, headless bool, group netip.Prefix) (state, authURL string, err error) {
	state, nonce := randomString(), randomString()
	verifier := oauth2.GenerateVerifier()
	now := time.Now()
	if now.UnixNano() < s.fullUntil.Load() {
		return "", "", ErrPendingFull
	}
	p := Pending{Nonce: nonce, Verifier: verifier, Binding: digest(binding), Headless: headless,
		Group: groupKey(group), Expires: now.Add(s.cfg.PendingTTL)}
	if err := s.cfg.Store.PutState(ctx, state, p, Room{Total: s.cfg.MaxPending, Group: s.cfg.MaxPendingPerGroup}); err != nil {
		if errors.Is(err, ErrPendingFull) {
			s.fullUntil.Store(now.Add(fullMemory).UnixNano())
		}
		return "", "", err
	}
	return state, op.oauth.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), nil
}

// fullRetryAfter is the Retry-After of [ErrPendingFull]: a pending login
// leaves when its browser comes back, mostly within a minute, or when it
// expires.
const fullRetryAfter = "10"

// groupRetryAfter is the Retry-After of [ErrGroupShare]: the group's
// place frees when one of its logins comes back or expires.
const groupRetryAfter = "10"

// refuseBegin answers a login that could not begin, in the wire profile's
// envelope with Retry-After: 429 for a group past its share, 503 when
// there is no room at all.
func (s *SSO) refuseBegin(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, ErrGroupShare) {
		w.Header().Set("Retry-After", groupRetryAfter)
		s.auth.WriteResponse(w, r, http.StatusTooManyRequests, "too many logins under way from your network, try again later", nil)
		return
	}
	if errors.Is(err, ErrPendingFull) {
		w.Header().Set("Retry-After", fullRetryAfter)
		s.auth.WriteResponse(w, r, http.StatusServiceUnavailable, "too many logins under way, try again later", nil)
		return
	}
	s.auth.WriteError(w, r, fmt.Errorf("%w: %w", nmauth.ErrStoreUnavailable, err))
}

func (s *SSO) serveLogin(w http.ResponseWriter, r *http.Request) {
	op := s.ready(w, r)
	if op == nil {
		return
	}
	binding := randomString()
	_, authURL, err := s.begin(r.Context(), op, binding, false, s.groupOf(r.Context()))
	if err != nil {
		s.refuseBegin(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: bindingCookie, Value: binding, Path: "/api/oauth/", HttpOnly: true,
		Secure: s.secure, SameSite: http.SameSiteLaxMode, MaxAge: int(s.cfg.PendingTTL / time.Second)})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, authURL, http.StatusFound)
}

func (s *SSO) serveCallback(w http.ResponseWriter, r *http.Request) {
	op := s.ready(w, r)
	if op == nil {
		return
	}
	q := r.URL.Query()
	state := q.Get("state")
	p, err := s.cfg.Store.TakeState(r.Context(), state, time.Now())
	switch {
	case errors.Is(err, nmauth.ErrNotFound) || state == "":
		s.refuse(w, r, http.StatusBadRequest, errState)
		return
	case err != nil:
		s.auth.WriteError(w, r, fmt.Errorf("%w: %w", nmauth.ErrStoreUnavailable, err))
		return
	}
	if !p.Headless {
		http.SetCookie(w, &http.Cookie{Name: bindingCookie, Path: "/api/oauth/", MaxAge: -1, HttpOnly: true, Secure: s.secure})
		c, cerr := r.Cookie(bindingCookie)
		if cerr != nil || subtle.ConstantTimeCompare([]byte(digest(c.Value)), []byte(p.Binding)) != 1 {
			s.refuse(w, r, http.StatusBadRequest, errBinding)
			return
		}
	}
	name, status, err := s.finish(r.Context(), op, q, p)
	if p.Headless {
		s.answerHeadless(w, r, state, p, name, status, err)
		return
	}
	var login nmauth.UserLogin
	if err == nil {
		login, status, err = s.issue(r.Context(), name)
	}
	if err != nil {
		s.refuse(w, r, status, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, s.cfg.CompleteURL+"#"+fragment(login), http.StatusFound)
}

// issue issues the login of the user name, with the status to refuse
// with.
func (s *SSO) issue(ctx context.Context, name string) (nmauth.UserLogin, int, error) {
	login, err := s.cfg.Extension.Login(ctx, name)
	if errors.Is(err, nmauth.ErrInvalidCredentials) {
		return nmauth.UserLogin{}, http.StatusForbidden, fmt.Errorf("%w: the user is disabled", errRefused)
	}
	return login, statusOf(err), err
}

// finish turns the provider's answer into the user to log in: the code
// exchanged with the login's PKCE verifier, the ID token verified and its
// nonce checked, the identity checked against the options and linked to a
// user. It returns the status to refuse with.
func (s *SSO) finish(ctx context.Context, op *provider, q url.Values, p Pending) (string, int, error) {
	if e := q.Get("error"); e != "" {
		return "", http.StatusForbidden, fmt.Errorf("%w: the provider answered %q", errRefused, e)
	}
	if s.cfg.HTTPClient != nil {
		ctx = oidc.ClientContext(ctx, s.cfg.HTTPClient)
	}
	tok, err := op.oauth.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(p.Verifier))
	if re := (*oauth2.RetrieveError)(nil); errors.As(err, &re) && re.Response.StatusCode < 500 {
		return "", http.StatusBadRequest, errExchange
	} else if err != nil {
		// The provider did not answer, or failed: not the client's fault.
		return "", http.StatusServiceUnavailable, fmt.Errorf("sso: the provider did not take the code: %w", err)
	}
	id, err := s.identify(ctx, op, tok, p.Nonce)
	if err != nil {
		return "", http.StatusBadRequest, err
	}
	if err := s.admit(id); err != nil {
		return "", http.StatusForbidden, err
	}
	if id.UserName, err = s.user(ctx, id); err != nil {
		return "", statusOf(err), err
	}
	if s.cfg.OnLogin != nil {
		if err := s.cfg.OnLogin(ctx, id); err != nil {
			return "", http.StatusForbidden, fmt.Errorf("%w: %w", errRefused, err)
		}
	}
	return id.UserName, http.StatusOK, nil
}

// identify verifies the ID token of tok and reads the identity from it,
// and from the userinfo endpoint when it carries no e-mail.
func (s *SSO) identify(ctx context.Context, op *provider, tok *oauth2.Token, nonce string) (Identity, error) {
	raw, _ := tok.Extra("id_token").(string)
	idt, err := op.verifier.Verify(ctx, raw)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %w", errIDToken, err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 {
		return Identity{}, errNonce
	}
	claims := map[string]any{}
	if err := idt.Claims(&claims); err != nil {
		return Identity{}, fmt.Errorf("%w: %w", errIDToken, err)
	}
	if _, ok := claims["email"]; !ok {
		info, err := op.oidc.UserInfo(ctx, oauth2.StaticTokenSource(tok))
		if err == nil && info.Subject == idt.Subject {
			var extra map[string]any
			if info.Claims(&extra) == nil {
				for k, v := range extra {
					if _, ok := claims[k]; !ok {
						claims[k] = v
					}
				}
			}
		}
	}
	id := Identity{Issuer: idt.Issuer, Subject: idt.Subject, Claims: claims}
	id.Email, _ = claims["email"].(string)
	id.EmailVerified, _ = claims["email_verified"].(bool)
	if groups, ok := claims[s.cfg.GroupsClaim].([]any); ok {
		for _, g := range groups {
			if gs, ok := g.(string); ok {
				id.Groups = append(id.Groups, gs)
			}
		}
	}
	return id, nil
}

// admit checks the identity against AllowedDomains and RequiredGroup.
func (s *SSO) admit(id Identity) error {
	if len(s.cfg.AllowedDomains) > 0 {
		_, domain, ok := strings.Cut(id.Email, "@")
		if !ok || !id.EmailVerified || !slices.ContainsFunc(s.cfg.AllowedDomains, func(d string) bool { return strings.EqualFold(d, domain) }) {
			return errDomain
		}
	}
	if s.cfg.RequiredGroup != "" && !slices.Contains(id.Groups, s.cfg.RequiredGroup) {
		return errGroup
	}
	return nil
}

// user finds the user the identity is linked to, or with CreateUsers
// makes one.
func (s *SSO) user(ctx context.Context, id Identity) (string, error) {
	name, err := s.cfg.Store.Link(ctx, id.Issuer, id.Subject)
	if err == nil || !errors.Is(err, nmauth.ErrNotFound) {
		return name, err
	}
	if s.cfg.FindUser != nil {
		if name, err := s.cfg.FindUser(ctx, id); err != nil || name != "" {
			return name, err
		}
	}
	if !s.cfg.CreateUsers {
		return "", errNoLink
	}
	want, _ := id.Claims["preferred_username"].(string)
	if want == "" {
		// The e-mail names the user only when the provider verified it:
		// else anyone could claim another's address at the provider.
		if !id.EmailVerified {
			return "", errDomain
		}
		want = id.Email
	}
	if want == "" {
		return "", errNoLink
	}
	// The user's password is random and never shown: the user logs in
	// through the provider, or has one set by an administrator.
	err = s.auth.Admin().CreateUser(ctx, want, randomString()+randomString())
	if errors.Is(err, nmauth.ErrExists) {
		return "", errTaken
	}
	if err != nil {
		return "", err
	}
	info, err := s.auth.Admin().LookupUser(ctx, want)
	if err != nil {
		return "", err
	}
	return info.Name, s.cfg.Store.AddLink(ctx, id.Issuer, id.Subject, info.Name)
}

// statusOf is the status of an error of finish that is not a refusal.
func statusOf(err error) int {
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, errNoLink), errors.Is(err, errTaken), errors.Is(err, errDomain):
		return http.StatusForbidden
	case errors.Is(err, nmauth.ErrInvalidUsername):
		return http.StatusForbidden
	}
	return http.StatusServiceUnavailable
}

// refuse answers a refused callback in the wire profile's envelope.
func (s *SSO) refuse(w http.ResponseWriter, r *http.Request, status int, err error) {
	if status >= 500 {
		s.auth.WriteError(w, r, fmt.Errorf("%w: %w", nmauth.ErrStoreUnavailable, err))
		return
	}
	s.auth.WriteResponse(w, r, status, strings.TrimPrefix(err.Error(), "sso: "), nil)
}

// fragment is the login in a URL fragment.
func fragment(l nmauth.UserLogin) string {
	v := url.Values{"userName": {l.UserName}}
	if l.PreAuthToken != "" {
		v.Set("preAuthToken", l.PreAuthToken)
	} else {
		v.Set("authToken", l.AuthToken)
	}
	return v.Encode()
}

func randomString() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// digest is what the store keeps of a binding value.
func digest(v string) string {
	if v == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(v))
	return hex.EncodeToString(sum[:])
}
