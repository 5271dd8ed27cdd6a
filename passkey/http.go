package passkey

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/nmauth/nmauth"
)

// Handler returns an http.Handler serving the passkey routes, and passing
// every other request to the Authenticator's own handler, so that it
// replaces that handler where the application mounts it (at "/api/", or
// under a prefix with [http.StripPrefix]):
//
//	POST /api/users/{username}/passkeys/register/begin   {name}        (the user's token)
//	POST /api/users/{username}/passkeys/register/finish  PublicKeyCredential  (the user's token)
//	GET  /api/users/{username}/passkeys                                (the user's token, or the master key)
//	POST /api/users/{username}/passkeys/{id}/remove                    (the user's token, or the master key)
//	POST /api/users/{username}/passkeys/reset                          (the master key)
//	POST /api/users/{username}/auth/passkey/begin                      (the pre-auth token)
//	POST /api/users/{username}/auth/passkey/finish       PublicKeyCredential  (the pre-auth token)
//	POST /api/users/adm/passkey/begin                                  (none; Config.Passwordless only)
//	POST /api/users/adm/passkey/finish                   PublicKeyCredential  (none; Config.Passwordless only)
//
// Every answer is the envelope of the Authenticator's wire profile, as
// [nmauth.Authenticator.WriteResponse] writes it; the two finishing logins
// answer as its user login does ([nmauth.Extension.WriteUserLogin]).
// The routes that take no bearer or a pre-auth token are under the
// per-client attempt limit of the login routes
// ([nmauth.Authenticator.Limit]): a begin, which proves nothing and writes
// a challenge, costs one attempt, and a finish that logs in gives its own
// back. A begin whose flow has no room left ([Config.MaxChallenges])
// answers 503 with Retry-After.
func (m *Manager) Handler() http.Handler {
	a := m.auth
	bearer := func(h http.HandlerFunc) http.Handler { return a.Middleware(h) }
	limited := func(h http.HandlerFunc) http.Handler { return a.Limit(h) }
	routes := []route{
		{http.MethodPost, "/api/users/{username}/passkeys/register/begin", bearer(m.serveBeginRegistration)},
		{http.MethodPost, "/api/users/{username}/passkeys/register/finish", bearer(m.serveFinishRegistration)},
		{http.MethodGet, "/api/users/{username}/passkeys", bearer(m.servePasskeys)},
		{http.MethodPost, "/api/users/{username}/passkeys/{id}/remove", bearer(m.serveRemove)},
		{http.MethodPost, "/api/users/{username}/passkeys/reset", bearer(m.serveReset)},
		{http.MethodPost, "/api/users/{username}/auth/passkey/begin", limited(m.serveBeginSecondFactor)},
		{http.MethodPost, "/api/users/{username}/auth/passkey/finish", limited(m.serveFinishSecondFactor)},
	}
	if m.cfg.Passwordless {
		routes = append(routes,
			route{http.MethodPost, "/api/users/adm/passkey/begin", limited(m.serveBeginLogin)},
			route{http.MethodPost, "/api/users/adm/passkey/finish", limited(m.serveFinishLogin)})
	}
	mux := http.NewServeMux()
	for _, rt := range routes {
		allow := rt.method
		if allow == http.MethodGet {
			allow = "GET, HEAD"
		}
		mux.Handle(rt.method+" "+rt.path, rt.handler)
		mux.HandleFunc(rt.path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			a.WriteResponse(w, r, http.StatusMethodNotAllowed, "method not allowed", nil)
		})
	}
	mux.Handle("/", a.Handler())
	return mux
}

// route is one route of the handler.
type route struct {
	method, path string
	handler      http.Handler
}

// writeError answers err: this package's errors with their status, every
// other as the Authenticator answers it.
func (m *Manager) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, message, ok := errorStatus(err)
	if !ok {
		m.auth.WriteError(w, r, err)
		return
	}
	switch status {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="nmauth"`)
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", strconv.Itoa(int(fullRetryAfter/time.Second)))
	}
	m.auth.WriteResponse(w, r, status, message, nil)
}

// registrationRequest is the body of a registration's begin.
type registrationRequest struct {
	Name string `json:"name"`
}

func (m *Manager) serveBeginRegistration(w http.ResponseWriter, r *http.Request) {
	var req registrationRequest
	if err := m.ext.DecodeJSON(w, r, &req); err != nil {
		m.writeError(w, r, err)
		return
	}
	p, _ := nmauth.FromContext(r.Context())
	out, err := m.BeginRegistration(r.Context(), p, r.PathValue("username"), req.Name)
	m.answer(w, r, "passkey registration started: answer with navigator.credentials.create", out, err)
}

func (m *Manager) serveFinishRegistration(w http.ResponseWriter, r *http.Request) {
	var body json.RawMessage
	if err := m.ext.DecodeJSON(w, r, &body); err != nil {
		m.writeError(w, r, err)
		return
	}
	p, _ := nmauth.FromContext(r.Context())
	out, err := m.FinishRegistration(r.Context(), p, r.PathValue("username"), body)
	m.answer(w, r, "passkey added", out, err)
}

// passkeyList is the answer of the listing.
type passkeyList struct {
	Passkeys []Info `json:"passkeys"`
}

func (m *Manager) servePasskeys(w http.ResponseWriter, r *http.Request) {
	p, _ := nmauth.FromContext(r.Context())
	out, err := m.Passkeys(r.Context(), p, r.PathValue("username"))
	m.answer(w, r, "passkeys", passkeyList{Passkeys: out}, err)
}

func (m *Manager) serveRemove(w http.ResponseWriter, r *http.Request) {
	p, _ := nmauth.FromContext(r.Context())
	err := m.Remove(r.Context(), p, r.PathValue("username"), r.PathValue("id"))
	m.answer(w, r, "passkey removed", nil, err)
}

// resetAnswer is the answer of a reset.
type resetAnswer struct {
	Removed int `json:"removed"`
}

func (m *Manager) serveReset(w http.ResponseWriter, r *http.Request) {
	if p, _ := nmauth.FromContext(r.Context()); p.Kind != nmauth.KindMaster {
		m.writeError(w, r, nmauth.ErrForbidden)
		return
	}
	n, err := m.Reset(r.Context(), r.PathValue("username"))
	m.answer(w, r, "passkeys reset; the user's tokens are revoked", resetAnswer{Removed: n}, err)
}

func (m *Manager) serveBeginSecondFactor(w http.ResponseWriter, r *http.Request) {
	token, err := nmauth.BearerToken(r.Header)
	if err != nil {
		m.writeError(w, r, err)
		return
	}
	out, err := m.BeginSecondFactor(r.Context(), token, r.PathValue("username"))
	m.answer(w, r, "passkey challenge: answer with navigator.credentials.get", out, err)
}

func (m *Manager) serveFinishSecondFactor(w http.ResponseWriter, r *http.Request) {
	token, err := nmauth.BearerToken(r.Header)
	if err != nil {
		m.writeError(w, r, err)
		return
	}
	var body json.RawMessage
	if err := m.ext.DecodeJSON(w, r, &body); err != nil {
		m.writeError(w, r, err)
		return
	}
	m.login(w, r)(m.FinishSecondFactor(r.Context(), token, r.PathValue("username"), body))
}

func (m *Manager) serveBeginLogin(w http.ResponseWriter, r *http.Request) {
	out, err := m.BeginLogin(r.Context())
	m.answer(w, r, "passkey challenge: answer with navigator.credentials.get", out, err)
}

func (m *Manager) serveFinishLogin(w http.ResponseWriter, r *http.Request) {
	var body json.RawMessage
	if err := m.ext.DecodeJSON(w, r, &body); err != nil {
		m.writeError(w, r, err)
		return
	}
	m.login(w, r)(m.FinishLogin(r.Context(), body))
}

// answer writes err, or else 200 with message and payload in the envelope.
func (m *Manager) answer(w http.ResponseWriter, r *http.Request, message string, payload any, err error) {
	if err != nil {
		m.writeError(w, r, err)
		return
	}
	m.auth.WriteResponse(w, r, http.StatusOK, message, payload)
}

// login returns the writer of a login's outcome: its error, or the user
// login's answer.
func (m *Manager) login(w http.ResponseWriter, r *http.Request) func(nmauth.UserLogin, error) {
	return func(out nmauth.UserLogin, err error) {
		if err != nil {
			m.writeError(w, r, err)
			return
		}
		m.ext.WriteUserLogin(w, out)
	}
}
