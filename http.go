// This file owns the handler: [Authenticator.Handler] and its routes, the
// bodies of the login and TOTP routes, and the functions that serve them.
// A route decodes its request (httpjson.go), calls one Authenticator method
// and writes the answer (wire.go) or the error (httperror.go).

package nmauth

import (
	"errors"
	"net/http"

	"github.com/nmauth/nmauth/internal/jsonbody"
	"github.com/nmauth/nmauth/internal/routemux"
)

// Errors of a request no route takes, mapped to 405 and 404.
var (
	errMethod  = errors.New("nmauth: method not allowed")
	errNoRoute = errors.New("nmauth: no such route")
)

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
	a.startKnownScan()
	routes := []routemux.Route{
		routemux.Post("/api/hosts/adm/authenticate", a.Limit(a.serveHostLogin(answerHostLogin))),
		routemux.Post("/api/users/adm/authenticate", a.Limit(http.HandlerFunc(a.serveUserLogin))),
		routemux.Post("/api/users/{username}/auth/init-totp", a.Middleware(http.HandlerFunc(a.serveInitTOTP))),
		routemux.Post("/api/users/{username}/auth/complete-totp", a.Middleware(http.HandlerFunc(a.serveCompleteTOTP))),
		routemux.Post("/api/users/{username}/auth/verify-totp", a.Limit(http.HandlerFunc(a.serveVerifyTOTP))),
	}
	for _, path := range a.nodeLoginPaths() {
		routes = append(routes, routemux.Post(path, a.Limit(a.serveHostLogin(answerNodeLogin))))
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

// serveHostLogin serves host login, or with answerNodeLogin node login for
// the network in the path: one body, one path, another token.
func (a *Authenticator) serveHostLogin(kind answerKind) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req hostAuthRequest
		body, err := readJSONBody(w, r)
		if err == nil && !req.parseFlat(body) {
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
		err = jsonbody.Require("username", req.Username, "password", req.Password)
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
