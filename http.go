// This file owns the handler: [Authenticator.Handler] and its routes, and
// the functions that serve the login and TOTP routes. A route decodes its
// request (httpjson.go, into a body of internal/wire), calls one
// Authenticator method and writes the answer (wire.go) or the error
// (httperror.go).

package nmauth

import (
	"errors"
	"net/http"

	"github.com/nmauth/nmauth/internal/jsonbody"
	"github.com/nmauth/nmauth/internal/routemux"
	"github.com/nmauth/nmauth/internal/wire"
)

// Errors of a request no route takes, mapped to 405 and 404.
var (
	errMethod  = errors.New("nmauth: method not allowed")
	errNoRoute = errors.New("nmauth: no such route")
)

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
	a.startKnownScan()
	routes := []routemux.Route{
		routemux.Post("/api/hosts/adm/authenticate", a.Limit(a.serveHostLogin(wire.AnswerHostLogin))),
		routemux.Post("/api/users/adm/authenticate", a.Limit(http.HandlerFunc(a.serveUserLogin))),
		routemux.Post("/api/users/{username}/auth/init-totp", a.Middleware(http.HandlerFunc(a.serveInitTOTP))),
		routemux.Post("/api/users/{username}/auth/complete-totp", a.Middleware(http.HandlerFunc(a.serveCompleteTOTP))),
		routemux.Post("/api/users/{username}/auth/verify-totp", a.Limit(http.HandlerFunc(a.serveVerifyTOTP))),
	}
	for _, path := range a.nodeLoginPaths() {
		routes = append(routes, routemux.Post(path, a.Limit(a.serveHostLogin(wire.AnswerNodeLogin))))
	}
	if a.access != nil {
		routes = append(routes, a.accessTokenRoutes()...)
	} else {
		routes = append(routes, a.logoutRoute())
	}
	if _, ok := a.guard.Store.(EnrollmentKeyStore); ok {
		routes = append(routes, a.enrollmentRoutes()...)
	}
	// Every answer is the envelope, also for a wrong method or path.
	return routemux.New(routes,
		func(w http.ResponseWriter, r *http.Request) { a.WriteError(w, r, errMethod) },
		func(w http.ResponseWriter, r *http.Request) { a.WriteError(w, r, errNoRoute) })
}

// serveHostLogin serves host login, or with wire.AnswerNodeLogin node
// login for the network in the path: one body, one path, another token.
func (a *Authenticator) serveHostLogin(kind wire.Answer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req wire.HostLoginBody
		body, err := jsonbody.Read(w, r, maxBodyBytes)
		if err == nil && !req.ParseFlat(body) {
			err = jsonbody.Decode(body, &req)
		}
		if err == nil {
			err = jsonbody.Require("id", req.ID, "password", req.Password)
		}
		if err != nil {
			a.WriteError(w, r, err)
			return
		}
		id, err := a.wireHostID(req.ID)
		var out any
		if err == nil && kind == wire.AnswerNodeLogin {
			out, err = a.LoginNode(r.Context(), r.PathValue("network"), id, req.MACAddress, req.Password)
		} else if err == nil {
			out, err = a.LoginHost(r.Context(), id, req.MACAddress, req.Password)
		}
		reply(a, w, r, kind, out, err)
	})
}

func (a *Authenticator) serveUserLogin(w http.ResponseWriter, r *http.Request) {
	var req wire.UserLoginBody
	err := decodeJSON(w, r, &req)
	if err == nil {
		err = jsonbody.Require("username", req.Username, "password", req.Password)
	}
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	out, err := a.LoginUser(r.Context(), req.Username, req.Password)
	reply(a, w, r, wire.AnswerUserLogin, out, err)
}

func (a *Authenticator) serveInitTOTP(w http.ResponseWriter, r *http.Request) {
	p, _ := FromContext(r.Context())
	out, err := a.InitTOTP(r.Context(), p, r.PathValue("username"))
	reply(a, w, r, wire.AnswerInitTOTP, out, err)
}

func (a *Authenticator) serveCompleteTOTP(w http.ResponseWriter, r *http.Request) {
	var req wire.TOTPBody
	if err := decodeJSON(w, r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	p, _ := FromContext(r.Context())
	out, err := a.CompleteTOTP(r.Context(), p, r.PathValue("username"), req.URL, req.Signature, req.TOTP, req.CurrentTOTP)
	reply(a, w, r, wire.AnswerCompleteTOTP, out, err)
}

func (a *Authenticator) serveVerifyTOTP(w http.ResponseWriter, r *http.Request) {
	token, err := BearerToken(r.Header)
	var req wire.TOTPBody
	if err == nil {
		err = decodeJSON(w, r, &req)
	}
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	out, err := a.VerifyTOTP(r.Context(), token, r.PathValue("username"), req.TOTP)
	reply(a, w, r, wire.AnswerVerifyTOTP, out, err)
}

// reply writes out as the successful answer of kind, or err when it is not
// nil.
func reply[T any](a *Authenticator, w http.ResponseWriter, r *http.Request, kind wire.Answer, out T, err error) {
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.writeAnswer(w, kind, out)
}

// respond answers r with message and payload in the envelope, 200, or
// with err when it is not nil.
func (a *Authenticator) respond(w http.ResponseWriter, r *http.Request, err error, message string, payload any) {
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.WriteResponse(w, r, http.StatusOK, message, payload)
}
