package nmauth

import (
	"net/http"

	"github.com/nmauth/nmauth/internal/jsonbody"
	"github.com/nmauth/nmauth/internal/routemux"
	"github.com/nmauth/nmauth/internal/wire"
)

// accessTokenRoutes are the routes of access tokens and logout. Each needs
// a bearer credential.
func (a *Authenticator) accessTokenRoutes() []routemux.Route {
	return []routemux.Route{
		routemux.Post("/api/v1/users/access_token", a.Middleware(http.HandlerFunc(a.serveCreateAccessToken))),
		routemux.Get("/api/v1/users/access_token", a.Middleware(http.HandlerFunc(a.serveListAccessTokens))),
		routemux.Delete("/api/v1/users/access_token", a.Middleware(http.HandlerFunc(a.serveDeleteAccessTokens))),
		a.logoutRoute(),
	}
}

// logoutRoute is the route of logout, served also where the Store keeps
// no access tokens.
func (a *Authenticator) logoutRoute() routemux.Route {
	return routemux.Post("/api/v1/users/logout", a.Middleware(http.HandlerFunc(a.serveLogout)))
}

// createdAccessToken is the answer of a creation: the only time a token's
// secret is shown.
type createdAccessToken struct {
	AccessToken
	Token string `json:"authToken"`
}

func (a *Authenticator) serveCreateAccessToken(w http.ResponseWriter, r *http.Request) {
	var body wire.AccessTokenBody
	err := decodeJSON(w, r, &body)
	if err == nil {
		err = jsonbody.Require("name", body.Name, "user_name", body.UserName)
	}
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	p, _ := FromContext(r.Context())
	t, token, err := a.CreateAccessToken(r.Context(), p, AccessTokenRequest(body))
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	if a.cfg.Wire == WireNetmaker {
		a.WriteResponse(w, r, http.StatusOK, "access token created for "+t.UserName,
			wire.NetmakerUserLogin{UserName: t.UserName, AuthToken: token})
		return
	}
	a.WriteResponse(w, r, http.StatusOK, "access token created", createdAccessToken{t, token})
}

func (a *Authenticator) serveListAccessTokens(w http.ResponseWriter, r *http.Request) {
	p, _ := FromContext(r.Context())
	user := r.URL.Query().Get("username")
	if user == "" && !p.IsMaster() {
		user = p.Name
	}
	if user == "" {
		a.WriteError(w, r, requestError("username is required"))
		return
	}
	ts, err := a.ListAccessTokens(r.Context(), p, user)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	var out any = ts
	if a.cfg.Wire == WireNetmaker {
		list := make([]wire.NetmakerAccessToken, len(ts))
		for i, t := range ts {
			list[i] = wire.NetmakerAccessToken{
				ID: t.ID, Name: t.Name, UserName: t.UserName, ExpiresAt: t.ExpiresAt,
				LastUsed: t.LastUsed, CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt,
				ReadOnly: t.ReadOnly, Networks: t.Networks,
			}
		}
		out = list
	}
	a.WriteResponse(w, r, http.StatusOK, "access tokens of "+ts0Name(ts, user), out)
}

// ts0Name is the user a list is of, as stored.
func ts0Name(ts []AccessToken, asked string) string {
	if len(ts) > 0 {
		return ts[0].UserName
	}
	return asked
}

// serveDeleteAccessTokens revokes the token ?id=, or with ?username= alone
// every token of that user.
func (a *Authenticator) serveDeleteAccessTokens(w http.ResponseWriter, r *http.Request) {
	p, _ := FromContext(r.Context())
	q := r.URL.Query()
	id, user := q.Get("id"), q.Get("username")
	var err error
	switch {
	case id != "" && user == "":
		err = a.DeleteAccessToken(r.Context(), p, id)
	case id == "" && user != "":
		err = a.DeleteAccessTokens(r.Context(), p, user)
	default:
		err = requestError("give either id, to revoke one token, or username, to revoke all of a user's")
	}
	a.respond(w, r, err, "revoked", nil)
}

// serveLogout revokes the bearer token it is called with. A username in
// the query, which Netmaker's clients send, must be the token's user.
func (a *Authenticator) serveLogout(w http.ResponseWriter, r *http.Request) {
	p, _ := FromContext(r.Context())
	if user := r.URL.Query().Get("username"); user != "" {
		name, err := PrepareUsername(user)
		if err != nil || name != p.Name {
			a.WriteError(w, r, ErrForbidden)
			return
		}
	}
	a.respond(w, r, a.Logout(r.Context(), p), "logged out", nil)
}
