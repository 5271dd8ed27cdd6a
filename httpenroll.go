package nmauth

import (
	"context"
	"errors"
	"net/http"

	"github.com/nmauth/nmauth/internal/enroll"
	"github.com/nmauth/nmauth/internal/guard"
	"github.com/nmauth/nmauth/internal/jsonanswer"
	"github.com/nmauth/nmauth/internal/jsonbody"
	"github.com/nmauth/nmauth/internal/routemux"
)

// createdKey is the spec profile's answer of a creation: the only time a
// key's secret is shown.
type createdKey struct {
	EnrollmentKey
	Key string `json:"key"`
}

// enrollmentRoutes are the routes of enrollment keys and of joins, in the
// profile's paths: the join route is open, behind the per-client
// limit; the others need an administrator (see mayAdminister).
func (a *Authenticator) enrollmentRoutes() []routemux.Route {
	admin := func(h http.HandlerFunc) http.Handler { return a.Middleware(a.adminOnly(h)) }
	join, keys := "/api/hosts/join", "/api/enrollment-keys"
	if a.cfg.Wire == WireNetmaker {
		join, keys = "/api/v1/host/register/{token...}", "/api/v1/enrollment-keys"
	}
	return []routemux.Route{
		routemux.Post(join, a.Limit(http.HandlerFunc(a.serveJoin))),
		routemux.Post(keys, admin(a.serveCreateKey)),
		routemux.Get(keys, admin(a.serveListKeys)),
		routemux.Delete(keys+"/{id}", admin(a.serveDeleteKey)),
		routemux.Post(keys+"/{id}/revoke", admin(a.serveRevokeKey)),
	}
}

// adminOnly lets through the master key, and a user, or a user's access
// token that may write, whom [Config.IsAdmin] names an administrator.
func (a *Authenticator) adminOnly(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, _ := FromContext(r.Context())
		ok, err := a.mayAdminister(r.Context(), p, r.Method != http.MethodGet)
		if err == nil && !ok {
			err = ErrForbidden
		}
		if err != nil {
			a.WriteError(w, r, err)
			return
		}
		next(w, r)
	}
}

// mayAdminister reports whether p may administer enrollment keys.
func (a *Authenticator) mayAdminister(ctx context.Context, p Principal, write bool) (bool, error) {
	switch {
	case p.IsMaster():
		return true, nil
	case a.cfg.IsAdmin == nil, p.Kind != KindUser && p.Kind != KindAccessToken, !p.Permits(write, ""):
		return false, nil
	}
	return a.guard.g.Ask(ctx, "administrator check", func(ctx context.Context) (bool, error) { return a.cfg.IsAdmin(ctx, p.Name) })
}

func (a *Authenticator) serveCreateKey(w http.ResponseWriter, r *http.Request) {
	k, err := a.keyRequest(w, r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	made, secret, err := a.Admin().CreateEnrollmentKey(r.Context(), k)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	if a.cfg.Wire == WireNetmaker {
		out := netmakerKeyOf(made)
		out.Token = enroll.NetmakerToken(r.Host, secret)
		jsonanswer.Write(w, http.StatusOK, out)
		return
	}
	a.WriteResponse(w, r, http.StatusOK, "enrollment key created", createdKey{made, secret})
}

// keyRequest decodes a creation's body in the profile's fields (see
// [enroll.ParseKey]).
func (a *Authenticator) keyRequest(w http.ResponseWriter, r *http.Request) (EnrollmentKey, error) {
	body, err := jsonbody.Read(w, r, maxBodyBytes)
	var k enroll.KeyBody
	if err == nil {
		k, err = enroll.ParseKey(body, a.cfg.Wire == WireNetmaker)
	}
	if err != nil {
		return EnrollmentKey{}, enrollError(err)
	}
	return EnrollmentKey{Name: k.Name, Tags: k.Tags, Networks: k.Networks,
		Uses: k.Uses, Unlimited: k.Unlimited, ExpiresAt: k.ExpiresAt}, nil
}

// enrollError is err with a client's mistake of package enroll made a
// requestError, 400.
func enrollError(err error) error {
	if e, ok := err.(enroll.RequestError); ok {
		return requestError(e)
	}
	return err
}

// netmakerKeyOf is k as Netmaker's server lists it.
func netmakerKeyOf(k EnrollmentKey) enroll.NetmakerKey {
	return enroll.NetmakerKeyOf(enroll.KeyBody{Name: k.Name, Tags: k.Tags, Networks: k.Networks,
		Uses: k.Uses, Unlimited: k.Unlimited, ExpiresAt: k.ExpiresAt}, k.ID, k.Used, !k.RevokedAt.IsZero())
}

func (a *Authenticator) serveListKeys(w http.ResponseWriter, r *http.Request) {
	ks, err := a.Admin().EnrollmentKeys(r.Context())
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	if a.cfg.Wire == WireNetmaker {
		out := make([]enroll.NetmakerKey, len(ks))
		for i, k := range ks {
			out[i] = netmakerKeyOf(k)
		}
		jsonanswer.Write(w, http.StatusOK, out)
		return
	}
	a.WriteResponse(w, r, http.StatusOK, "enrollment keys", ks)
}

func (a *Authenticator) serveDeleteKey(w http.ResponseWriter, r *http.Request) {
	if err := a.Admin().DeleteEnrollmentKey(r.Context(), r.PathValue("id")); err != nil {
		a.WriteError(w, r, err)
		return
	}
	if a.cfg.Wire == WireNetmaker {
		// Netmaker's server answers a deletion with an empty body.
		w.WriteHeader(http.StatusOK)
		return
	}
	a.WriteResponse(w, r, http.StatusOK, "enrollment key deleted", nil)
}

func (a *Authenticator) serveRevokeKey(w http.ResponseWriter, r *http.Request) {
	a.respond(w, r, a.Admin().RevokeEnrollmentKey(r.Context(), r.PathValue("id")), "enrollment key revoked", nil)
}

// serveJoin serves a join: Netmaker's register route, with the token in
// the path and netclient's host in the body, or the spec profile's, with
// the key and the host in the body.
func (a *Authenticator) serveJoin(w http.ResponseWriter, r *http.Request) {
	netmaker := a.cfg.Wire == WireNetmaker
	var key string
	var err error
	if netmaker {
		key, err = enroll.NetmakerTokenKey(r.PathValue("token"))
	}
	var body []byte
	if err == nil {
		body, err = jsonbody.Read(w, r, maxBodyBytes)
	}
	var h enroll.Join
	if err == nil && netmaker {
		h, err = enroll.ParseJoin(body, "hostpass", true)
		h.Key = key
	} else if err == nil {
		h, err = enroll.ParseJoin(body, "password", false)
	}
	if err == nil {
		h.ID, err = a.wireHostID(h.ID)
	}
	if err != nil {
		a.WriteError(w, r, enrollError(err))
		return
	}
	out, err := a.join(r.Context(), h)
	switch {
	case err != nil:
		a.WriteError(w, r, err)
	case netmaker:
		jsonanswer.Write(w, http.StatusOK, enroll.NetmakerJoined{ServerConfig: out.serverConfig, RequestedHost: h.Public})
	default:
		a.WriteResponse(w, r, http.StatusOK, "host joined",
			enroll.SpecJoined{ID: out.id, Networks: out.key.Networks, ServerConfig: out.serverConfig})
	}
}

// joined is what a join made.
type joined struct {
	id           string
	key          EnrollmentKey
	serverConfig any
}

// join joins h and asks [Config.HostJoined] for the answer's server
// config. The host is joined by then whatever the hook answers.
func (a *Authenticator) join(ctx context.Context, h enroll.Join) (joined, error) {
	id, err := PrepareHostID(h.ID)
	if err != nil {
		return joined{}, err
	}
	k, err := a.JoinHost(ctx, h.Key, id, h.MAC, h.Password)
	if err != nil {
		return joined{}, err
	}
	out := joined{id: id, key: k, serverConfig: struct{}{}}
	if a.cfg.HostJoined == nil {
		return out, nil
	}
	cfg, err := guard.Result(a.guard.g, ctx, "host joined hook", func(ctx context.Context) (any, error) {
		return a.cfg.HostJoined(ctx, id, k, h.Public)
	}, func(error) bool { return true })
	if err != nil {
		a.log.Error("nmauth: HostJoined failed; the host has joined", "host", id, "err", err)
		return joined{}, errHookFailed
	}
	if cfg != nil {
		out.serverConfig = cfg
	}
	return out, nil
}

// errHookFailed is a join whose HostJoined hook failed: 500.
var errHookFailed = errors.New("nmauth: the application's HostJoined hook failed")
