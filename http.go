package nmauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// maxBodyBytes is the largest request body the handler reads.
const maxBodyBytes = 64 << 10

// Request decoding errors, mapped to 415, 413 and 400.
var (
	errContentType = errors.New("nmauth: content type must be application/json")
	errBodyTooBig  = errors.New("nmauth: request body too large")
	errBadJSON     = errors.New("nmauth: malformed JSON body")
	// errDuplicateKey is a JSON body with one field given twice.
	errDuplicateKey = errors.New("nmauth: duplicate key in JSON body")
	errMethod       = errors.New("nmauth: method not allowed")
	errNoRoute      = errors.New("nmauth: no such route")
)

// specEnvelope is the spec's generic result: code, message and a payload,
// which WriteResponse and WriteError write in the spec's profile.
type specEnvelope struct {
	Code     int    `json:"code"`
	Message  string `json:"message"`
	Response any    `json:"response,omitempty"`
}

// hostAuthRequest is the body of host login.
type hostAuthRequest struct {
	ID         string `json:"id"`
	MACAddress string `json:"macaddress"`
	Password   string `json:"password"`
}

// userAuthRequest is the body of user login.
type userAuthRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// totpRequest is the body of complete-totp and verify-totp.
type totpRequest struct {
	URL       string `json:"otp_auth_url"`
	Signature string `json:"otp_auth_url_signature"`
	TOTP      string `json:"totp"`
	// CurrentTOTP is, at complete-totp for a user who already has TOTP
	// on, a code of the current secret or a recovery code (see
	// [Authenticator.CompleteTOTP]).
	CurrentTOTP string `json:"current_totp,omitempty"`
}

// Handler returns an http.Handler serving the five routes of the spec and
// node login:
//
//	POST /api/hosts/adm/authenticate
//	POST /api/users/adm/authenticate
//	POST /api/users/{username}/auth/init-totp      (bearer)
//	POST /api/users/{username}/auth/complete-totp  (bearer)
//	POST /api/users/{username}/auth/verify-totp    (pre-auth token)
//	POST /api/nodes/{network}/authenticate
//	POST /api/nodes/adm/{network}/authenticate     (WireNetmaker only)
//	POST /api/v1/users/access_token                 (bearer)
//	GET /api/v1/users/access_token?username=U       (bearer)
//	DELETE /api/v1/users/access_token?id=ID         (bearer; or ?username=U for all)
//	POST /api/v1/users/logout                       (bearer)
//
// and, where the Store keeps enrollment keys (see [EnrollmentKeyStore]),
// the join and enrollment-key routes of the profile (see
// docs/embedding.md): Netmaker's POST /api/v1/host/register/{token} and
// /api/v1/enrollment-keys, or the spec profile's POST /api/hosts/join and
// /api/enrollment-keys. The join route is open, behind [Authenticator.Limit];
// the key routes need the master key or an administrator
// ([Config.IsAdmin]).
//
// The access-token routes are served when the Store keeps access tokens
// (see [AccessTokenStore]); see [Authenticator.CreateAccessToken] and
// [Authenticator.Logout] for who may do what.
//
// Mount it on the application's mux at "/api/" (its more specific routes
// still win), or under a prefix with [http.StripPrefix]. [Config.Wire]
// chooses the bytes of every answer.
func (a *Authenticator) Handler() http.Handler {
	routes := []route{
		{http.MethodPost, "/api/hosts/adm/authenticate", a.Limit(a.serveHostLogin(answerHostLogin))},
		{http.MethodPost, "/api/users/adm/authenticate", a.Limit(http.HandlerFunc(a.serveUserLogin))},
		{http.MethodPost, "/api/users/{username}/auth/init-totp", a.Middleware(http.HandlerFunc(a.serveInitTOTP))},
		{http.MethodPost, "/api/users/{username}/auth/complete-totp", a.Middleware(http.HandlerFunc(a.serveCompleteTOTP))},
		{http.MethodPost, "/api/users/{username}/auth/verify-totp", a.Limit(http.HandlerFunc(a.serveVerifyTOTP))},
	}
	for _, path := range a.nodeLoginPaths() {
		routes = append(routes, route{http.MethodPost, path, a.Limit(a.serveHostLogin(answerNodeLogin))})
	}
	if a.access != nil {
		routes = append(routes, a.accessTokenRoutes()...)
	} else {
		routes = append(routes, a.logoutRoute())
	}
	if _, ok := a.guard.Store.(EnrollmentKeyStore); ok {
		routes = append(routes, a.enrollmentRoutes()...)
	}
	mux := http.NewServeMux()
	// Every answer is the envelope, also for a wrong method or path.
	allowed := map[string][]string{}
	for _, rt := range routes {
		mux.Handle(rt.method+" "+rt.path, rt.handler)
		allowed[rt.path] = append(allowed[rt.path], rt.method)
	}
	for path, methods := range allowed {
		allow := strings.Join(methods, ", ")
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			a.WriteError(w, r, errMethod)
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { a.WriteError(w, r, errNoRoute) })
	return mux
}

// route is one route of the handler.
type route struct {
	method, path string
	handler      http.Handler
}

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
		ctx.remote = r.RemoteAddr
	} else if _, ok := clientAddrOf(ctx.Context); !ok {
		ctx.named = true
		ctx.client = clientAddr(r, a.cfg.TrustedProxies)
	}
	cred, err := BearerToken(r.Header)
	if err == nil {
		var p Principal
		var hit bool
		if ctx.p, hit, err = a.checkBearer(ctx, cred, &p); err == nil && !hit {
			ctx.p = extPrincipal(&p)
		}
		if err != nil || a.clients.wrongBearersSeen() {
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
	return &g.req, ctx.p.kind(), nil
}

// guardedRequest is the request [Authenticator.authenticate] hands on,
// with its context, in one allocation.
type guardedRequest struct {
	ctx bearerContext
	req http.Request
}

// bearerContext is the context of a request that went through the bearer
// check: in one value, the [Principal] once the check passed, kept as the
// token cache keeps it, and the client address when no caller named one.
// Behind no trusted proxy the address is read from the connection's
// address only when asked, by an event, and only if the context this one
// wraps names none: a request that only passes the check neither parses
// it nor looks for another.
type bearerContext struct {
	context.Context
	p       compactPrincipal
	checked bool
	// named is set when this context names the client, the address
	// behind the trusted proxies, client.
	named bool
	// remote is the connection's address, when no proxy is trusted.
	remote string
	client netip.Addr
}

func (c *bearerContext) Value(key any) any {
	switch key.(type) {
	case principalKey:
		if c.checked {
			return c
		}
	case clientAddrKey:
		if c.named {
			return &c.client
		}
		if c.remote == "" {
			break
		}
		if v := c.Context.Value(key); v != nil {
			return v
		}
		addr := remotePeer(c.remote)
		if addr.Is6() {
			addr = netip.PrefixFrom(addr, 64).Masked().Addr()
		}
		return addr
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

// maxCredentialLen bounds a bearer credential; tokens here are far shorter.
const maxCredentialLen = 4096

// BearerToken finds the credential in the Authorization header. There must
// be exactly one such header, of the form "Bearer <credential>" with the
// scheme in any case, and one credential of visible ASCII without spaces.
func BearerToken(h http.Header) (string, error) {
	v := h["Authorization"]
	if len(v) != 1 {
		return "", ErrUnauthenticated
	}
	const scheme = "bearer "
	s := v[0]
	if len(s) <= len(scheme) || !strings.EqualFold(s[:len(scheme)], scheme) {
		return "", ErrUnauthenticated
	}
	cred := strings.TrimLeft(s[len(scheme):], " ")
	if cred == "" || len(cred) > maxCredentialLen {
		return "", ErrUnauthenticated
	}
	if !visibleASCII(cred) {
		return "", ErrUnauthenticated
	}
	return cred, nil
}

// visibleASCII reports whether every byte of s is visible ASCII, '!'
// through '~'. Every request behind the bearer check pays for it, so it
// reads eight bytes at a time, 32 between two tests (see outOfRange).
func visibleASCII(s string) bool {
	const tops = 0x8080808080808080
	var out uint64
	for ; len(s) >= 32; s = s[32:] {
		out |= outOfRange(word(s)) | outOfRange(word(s[8:])) | outOfRange(word(s[16:])) | outOfRange(word(s[24:]))
	}
	for ; len(s) >= 8; s = s[8:] {
		out |= outOfRange(word(s))
	}
	if out&tops != 0 {
		return false
	}
	for i := range len(s) {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// outOfRange has the top bit of each byte of w set that is not visible
// ASCII; the other bits are noise. A byte below '!' borrows into its top
// bit when '!' is taken from it, one above '~' has its top bit set or
// gets it when one is added. A borrow or carry crosses into the next byte
// only from a byte that is itself out of range, so any top bit set means
// some byte is out of range.
func outOfRange(w uint64) uint64 {
	const ones = 0x0101010101010101
	return (w-'!'*ones)&^w | w | (w + ones)
}

// word is the first eight bytes of s, little-endian, in one load.
func word(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// serveHostLogin serves host login, or with answerNodeLogin node login for
// the network in the path: one body, one path, another token.
func (a *Authenticator) serveHostLogin(kind answerKind) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req hostAuthRequest
		body, err := readJSONBody(w, r)
		if err == nil && !req.parseFlat(body) {
			err = decodeJSONBody(body, &req)
		}
		if err == nil {
			err = requireFields("id", req.ID, "password", req.Password)
		}
		if err != nil {
			a.WriteError(w, r, err)
			return
		}
		id, err := a.wireHostID(req.ID)
		var out any
		if err == nil && kind == answerNodeLogin {
			out, err = a.LoginNode(r.Context(), r.PathValue("network"), id, req.MACAddress, req.Password)
		} else if err == nil {
			out, err = a.LoginHost(r.Context(), id, req.MACAddress, req.Password)
		}
		if err != nil {
			a.WriteError(w, r, err)
			return
		}
		a.writeAnswer(w, kind, out)
	})
}

func (a *Authenticator) serveUserLogin(w http.ResponseWriter, r *http.Request) {
	var req userAuthRequest
	err := decodeJSON(w, r, &req)
	if err == nil {
		err = requireFields("username", req.Username, "password", req.Password)
	}
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	out, err := a.LoginUser(r.Context(), req.Username, req.Password)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.writeAnswer(w, answerUserLogin, out)
}

func (a *Authenticator) serveInitTOTP(w http.ResponseWriter, r *http.Request) {
	p, _ := FromContext(r.Context())
	out, err := a.InitTOTP(r.Context(), p, r.PathValue("username"))
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.writeAnswer(w, answerInitTOTP, out)
}

func (a *Authenticator) serveCompleteTOTP(w http.ResponseWriter, r *http.Request) {
	var req totpRequest
	if err := decodeJSON(w, r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	p, _ := FromContext(r.Context())
	out, err := a.CompleteTOTP(r.Context(), p, r.PathValue("username"), req.URL, req.Signature, req.TOTP, req.CurrentTOTP)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.writeAnswer(w, answerCompleteTOTP, out)
}

func (a *Authenticator) serveVerifyTOTP(w http.ResponseWriter, r *http.Request) {
	token, err := BearerToken(r.Header)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	var req totpRequest
	if err := decodeJSON(w, r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	out, err := a.VerifyTOTP(r.Context(), token, r.PathValue("username"), req.TOTP)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.writeAnswer(w, answerVerifyTOTP, out)
}

// decodeJSON reads exactly one JSON value of at most maxBodyBytes from an
// application/json body into v, a pointer to a struct, whose keys must
// match v's field names exactly (see [checkKeys]).
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := readJSONBody(w, r)
	if err != nil {
		return err
	}
	return decodeJSONBody(body, v)
}

// readJSONBody reads an application/json body of at most maxBodyBytes.
func readJSONBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return nil, errContentType
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		return nil, decodeError(err)
	}
	return body, nil
}

// decodeJSONBody decodes body as decodeJSON does.
func decodeJSONBody(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if err := dec.Decode(&struct{}{}); err != io.EOF {
		return decodeError(err)
	}
	return checkKeys(body, jsonFields(v))
}

// parseFlat fills req from body when body is one JSON object of string
// values, each key one of req's fields at most once, each string without
// an escape or a control character and in valid UTF-8, with nothing but
// JSON whitespace around its tokens: the body every netclient sends. Such
// a body decodeJSONBody takes too, with the same fields, so parseFlat only
// saves its work. For any other body it reports false and leaves req as it
// was, for decodeJSONBody to judge.
func (req *hostAuthRequest) parseFlat(body []byte) bool {
	var out hostAuthRequest
	var seen [3]bool
	i := skipJSONSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return false
	}
	i = skipJSONSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		i++
	} else {
		for {
			key, j, ok := plainJSONString(body, i)
			if !ok {
				return false
			}
			if j = skipJSONSpace(body, j); j >= len(body) || body[j] != ':' {
				return false
			}
			val, j, ok := plainJSONString(body, skipJSONSpace(body, j+1))
			if !ok {
				return false
			}
			var f int
			var dst *string
			switch string(key) {
			case "id":
				f, dst = 0, &out.ID
			case "macaddress":
				f, dst = 1, &out.MACAddress
			case "password":
				f, dst = 2, &out.Password
			default:
				return false
			}
			if seen[f] {
				return false
			}
			seen[f], *dst = true, string(val)
			if j = skipJSONSpace(body, j); j >= len(body) {
				return false
			}
			if body[j] == '}' {
				i = j + 1
				break
			}
			if body[j] != ',' {
				return false
			}
			i = skipJSONSpace(body, j+1)
		}
	}
	if skipJSONSpace(body, i) != len(body) {
		return false
	}
	*req = out
	return true
}

// skipJSONSpace returns the index of the first byte at or after i in b
// that is not JSON whitespace.
func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainJSONString reads the JSON string at b[i]: its contents and the
// index after it, when it has no escape and no control character and is
// valid UTF-8, the strings whose contents are their bytes.
func plainJSONString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s := b[i+1 : j]
			return s, j + 1, utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, j, false
		}
	}
	return nil, len(b), false
}

func decodeError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return errBodyTooBig
	}
	return errBadJSON
}

// errorStatus maps an error to its HTTP status and the only text a client
// sees. Anything it does not know is a 500 with a generic message.
func errorStatus(err error) (int, string) {
	var field *fieldError
	var badRequest requestError
	switch {
	case errors.Is(err, errContentType):
		return http.StatusUnsupportedMediaType, "content type must be application/json"
	case errors.Is(err, errBodyTooBig):
		return http.StatusRequestEntityTooLarge, "request body too large"
	case errors.Is(err, errBadJSON):
		return http.StatusBadRequest, "malformed JSON body"
	case errors.Is(err, errDuplicateKey):
		return http.StatusBadRequest, "a field is given twice in the JSON body"
	case errors.As(err, &field):
		return http.StatusBadRequest, field.message()
	case errors.Is(err, errMethod):
		return http.StatusMethodNotAllowed, "method not allowed"
	case errors.Is(err, errNoRoute):
		return http.StatusNotFound, "not found"
	case errors.Is(err, ErrInvalidCredentials):
		return http.StatusUnauthorized, "invalid credentials"
	case errors.Is(err, ErrUnauthenticated):
		return http.StatusUnauthorized, "missing or invalid bearer credential"
	case errors.Is(err, ErrInvalidCode):
		return http.StatusUnauthorized, "invalid TOTP code"
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden, "forbidden"
	case errors.Is(err, ErrMalformedCode):
		return http.StatusBadRequest, "totp must be a 6-digit code or a recovery code"
	case errors.Is(err, errWrongEnrollmentCode):
		return http.StatusBadRequest, "wrong TOTP code"
	case errors.Is(err, ErrInvalidEnrollment):
		return http.StatusBadRequest, "invalid or expired enrollment"
	case errors.Is(err, ErrInvalidUsername):
		return http.StatusBadRequest, "invalid username"
	case errors.Is(err, ErrInvalidPassword):
		return http.StatusBadRequest, "invalid password"
	case errors.Is(err, ErrInvalidHost):
		return http.StatusBadRequest, "invalid host id or MAC address"
	case errors.Is(err, ErrInvalidNetwork):
		return http.StatusBadRequest, "invalid network"
	case errors.Is(err, errNoAccessToken):
		return http.StatusNotFound, "access token not found"
	case errors.Is(err, errNoEnrollmentKey):
		return http.StatusNotFound, "enrollment key not found"
	case errors.Is(err, ErrInvalidEnrollmentKey):
		return http.StatusBadRequest, "invalid enrollment key"
	case errors.Is(err, ErrEnrollmentKeysOff):
		return http.StatusNotImplemented, "enrollment keys are not kept by this server's store"
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound, "user not found"
	case errors.As(err, &badRequest):
		return http.StatusBadRequest, string(badRequest)
	case errors.Is(err, ErrTooManyAccessTokens):
		return http.StatusConflict, "too many access tokens for this user"
	case errors.Is(err, ErrAccessTokensOff):
		return http.StatusNotImplemented, "access tokens are not kept by this server's store"
	case errors.Is(err, ErrThrottled):
		return http.StatusTooManyRequests, "too many attempts, try again later"
	case errors.Is(err, ErrOverloaded):
		return http.StatusServiceUnavailable, "server busy, try again later"
	case errors.Is(err, ErrStoreUnavailable):
		return http.StatusServiceUnavailable, "service unavailable, try again later"
	case errors.Is(err, ErrDataFault):
		return http.StatusInternalServerError, "internal error"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "request cancelled"
	}
	return http.StatusInternalServerError, "internal error"
}

// WriteError answers r with err in the active wire profile's envelope,
// with the status the handler's own routes give that error: among others
// 401 with WWW-Authenticate for [ErrUnauthenticated] and
// [ErrInvalidCredentials], 403 for [ErrForbidden], 404 for [ErrNotFound],
// 429 or 503 with Retry-After for [ErrThrottled], [ErrOverloaded] and
// [ErrStoreUnavailable], and 500 with a generic message for an error it
// does not know. The client sees only that message, never err's text; the
// detail of a 5xx goes to the log.
func (a *Authenticator) WriteError(w http.ResponseWriter, r *http.Request, err error) {
	status, body := a.wireError(err)
	h := w.Header()
	switch status {
	case http.StatusUnauthorized:
		h.Set("WWW-Authenticate", `Bearer realm="nmauth"`)
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		h.Set("Retry-After", strconv.Itoa(retryAfterSeconds(err)))
	}
	// A Store fault is logged where it happens, at a bounded rate.
	if status >= 500 && !errors.Is(err, ErrStoreUnavailable) {
		// A full hashing queue is load shed by design, not a fault.
		level := slog.LevelError
		if status == http.StatusServiceUnavailable {
			level = slog.LevelWarn
		}
		a.log.LogAttrs(r.Context(), level, "request failed",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("err", err.Error()))
	}
	writeJSON(w, status, body)
}

// retryAfterSeconds rounds a wait up to whole seconds, at least one.
func retryAfterSeconds(err error) int {
	var d time.Duration
	if r := (*RetryError)(nil); errors.As(err, &r) {
		d = r.RetryAfter
	}
	return max(1, int((d+time.Second-1)/time.Second))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	setJSONHeader(w, status)
	json.NewEncoder(w).Encode(v)
}

// writeJSONBytes writes b, encoded JSON, as writeJSON writes a value.
func writeJSONBytes(w http.ResponseWriter, status int, b []byte) {
	setJSONHeader(w, status)
	w.Write(b)
}

// setJSONHeader writes status with the headers of a JSON answer. Their
// keys are canonical, so they are set in the map directly, both values
// from one allocation (each slice at its full capacity, so that adding a
// value to one copies it).
func setJSONHeader(w http.ResponseWriter, status int) {
	v := []string{"application/json", "no-store"}
	h := w.Header()
	h["Content-Type"], h["Cache-Control"] = v[:1:1], v[1:2:2]
	w.WriteHeader(status)
}
