package nmauth

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/nmauth/nmauth/internal/jsonbody"
)

// Netmaker's key types, as its server lists them.
const (
	netmakerKeyTime      = 1
	netmakerKeyUses      = 2
	netmakerKeyUnlimited = 3
)

// netmakerNilUUID is the relay of a key without one, as Netmaker writes
// it.
const netmakerNilUUID = "00000000-0000-0000-0000-000000000000"

// netmakerKeyBody is the body of Netmaker's key creation, as nmctl sends
// it. Netmaker names a key by its tags, the first of which is its name.
type netmakerKeyBody struct {
	Expiration int64    `json:"expiration"`
	Uses       int      `json:"uses_remaining"`
	Networks   []string `json:"networks"`
	Unlimited  bool     `json:"unlimited"`
	Tags       []string `json:"tags"`
}

// netmakerKey is a key as Netmaker's server writes it. Value is the key's
// id, which DELETE takes; Token, only in the answer of a creation, is what
// netclient join -t takes. Revoked is nmauth's own.
type netmakerKey struct {
	Expiration    time.Time `json:"expiration"`
	UsesRemaining int       `json:"uses_remaining"`
	Value         string    `json:"value"`
	Networks      []string  `json:"networks"`
	Unlimited     bool      `json:"unlimited"`
	Tags          []string  `json:"tags"`
	Token         string    `json:"token,omitempty"`
	Type          int       `json:"type"`
	Relay         string    `json:"relay"`
	Groups        []string  `json:"groups"`
	Default       bool      `json:"default"`
	AutoEgress    bool      `json:"auto_egress"`
	AutoAssignGW  bool      `json:"auto_assign_gw"`
	Revoked       bool      `json:"revoked,omitempty"`
}

// netmakerToken is what a Netmaker enrollment token encodes.
type netmakerToken struct {
	Server string `json:"server"`
	Value  string `json:"value"`
}

// specKeyBody is the body of key creation in the spec profile.
type specKeyBody struct {
	Name      string    `json:"name"`
	Tags      []string  `json:"tags"`
	Networks  []string  `json:"networks"`
	Uses      int       `json:"uses"`
	Unlimited bool      `json:"unlimited"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// createdKey is the spec profile's answer of a creation: the only time a
// key's secret is shown.
type createdKey struct {
	EnrollmentKey
	Key string `json:"key"`
}

// specJoined is the spec profile's answer of a join.
type specJoined struct {
	ID           string   `json:"id"`
	Networks     []string `json:"networks"`
	ServerConfig any      `json:"serverConfig"`
}

// netmakerJoined is the answer of Netmaker's register route.
type netmakerJoined struct {
	ServerConfig  any             `json:"server_config"`
	RequestedHost json.RawMessage `json:"requested_host"`
}

// enrollmentRoutes are the routes of enrollment keys and of joins, in the
// profile's paths: the register route is open, behind the per-client
// limit; the others need an administrator (see mayAdminister).
func (a *Authenticator) enrollmentRoutes() []route {
	admin := func(h http.HandlerFunc) http.Handler { return a.Middleware(a.adminOnly(h)) }
	if a.cfg.Wire == WireNetmaker {
		return []route{
			{http.MethodPost, "/api/v1/host/register/{token...}", a.Limit(http.HandlerFunc(a.serveRegister))},
			{http.MethodPost, "/api/v1/enrollment-keys", admin(a.serveCreateKey)},
			{http.MethodGet, "/api/v1/enrollment-keys", admin(a.serveListKeys)},
			{http.MethodDelete, "/api/v1/enrollment-keys/{id}", admin(a.serveDeleteKey)},
			{http.MethodPost, "/api/v1/enrollment-keys/{id}/revoke", admin(a.serveRevokeKey)},
		}
	}
	return []route{
		{http.MethodPost, "/api/hosts/join", a.Limit(http.HandlerFunc(a.serveJoin))},
		{http.MethodPost, "/api/enrollment-keys", admin(a.serveCreateKey)},
		{http.MethodGet, "/api/enrollment-keys", admin(a.serveListKeys)},
		{http.MethodDelete, "/api/enrollment-keys/{id}", admin(a.serveDeleteKey)},
		{http.MethodPost, "/api/enrollment-keys/{id}/revoke", admin(a.serveRevokeKey)},
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
	return a.guard.ask(ctx, "administrator check", func(ctx context.Context) (bool, error) { return a.cfg.IsAdmin(ctx, p.Name) })
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
		tok, _ := json.Marshal(netmakerToken{Server: r.Host, Value: secret})
		out.Token = base64.StdEncoding.EncodeToString(tok)
		writeJSON(w, http.StatusOK, out)
		return
	}
	a.WriteResponse(w, r, http.StatusOK, "enrollment key created", createdKey{made, secret})
}

// keyRequest decodes a creation's body in the profile's fields. A
// Netmaker key is named by its first tag, and one with an expiry and
// neither uses nor unlimited admits any number of joins until then, as
// Netmaker's does.
func (a *Authenticator) keyRequest(w http.ResponseWriter, r *http.Request) (EnrollmentKey, error) {
	if a.cfg.Wire != WireNetmaker {
		var body specKeyBody
		if err := decodeJSON(w, r, &body); err != nil {
			return EnrollmentKey{}, err
		}
		return EnrollmentKey{Name: body.Name, Tags: body.Tags, Networks: body.Networks,
			Uses: body.Uses, Unlimited: body.Unlimited, ExpiresAt: body.ExpiresAt}, nil
	}
	var body netmakerKeyBody
	if err := decodeJSON(w, r, &body); err != nil {
		return EnrollmentKey{}, err
	}
	if len(body.Tags) == 0 {
		return EnrollmentKey{}, requestError("tags: give the key a name as its first tag")
	}
	k := EnrollmentKey{Name: body.Tags[0], Tags: body.Tags, Networks: body.Networks,
		Uses: body.Uses, Unlimited: body.Unlimited || body.Uses == 0 && body.Expiration > 0}
	if body.Expiration > 0 {
		k.ExpiresAt = time.Unix(body.Expiration, 0)
	}
	return k, nil
}

// netmakerKeyOf is k as Netmaker's server lists it.
func netmakerKeyOf(k EnrollmentKey) netmakerKey {
	out := netmakerKey{
		Expiration: k.ExpiresAt, Value: k.ID, Networks: k.Networks, Unlimited: k.Unlimited,
		Tags: k.Tags, Relay: netmakerNilUUID, Revoked: !k.RevokedAt.IsZero(),
	}
	switch {
	case !k.Unlimited:
		out.Type, out.UsesRemaining = netmakerKeyUses, max(0, k.Uses-k.Used)
	case !k.ExpiresAt.IsZero():
		out.Type = netmakerKeyTime
	default:
		out.Type = netmakerKeyUnlimited
	}
	if out.Networks == nil {
		out.Networks = []string{}
	}
	if out.Tags == nil {
		out.Tags = []string{k.Name}
	}
	return out
}

func (a *Authenticator) serveListKeys(w http.ResponseWriter, r *http.Request) {
	ks, err := a.Admin().EnrollmentKeys(r.Context())
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	if a.cfg.Wire == WireNetmaker {
		out := make([]netmakerKey, len(ks))
		for i, k := range ks {
			out[i] = netmakerKeyOf(k)
		}
		writeJSON(w, http.StatusOK, out)
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
	if err := a.Admin().RevokeEnrollmentKey(r.Context(), r.PathValue("id")); err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.WriteResponse(w, r, http.StatusOK, "enrollment key revoked", nil)
}

// serveRegister serves Netmaker's register route: the token in the path,
// netclient's host in the body.
func (a *Authenticator) serveRegister(w http.ResponseWriter, r *http.Request) {
	key, err := netmakerTokenKey(r.PathValue("token"))
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	body, err := readJSONBody(w, r)
	var h joiningBody
	if err == nil {
		h, err = parseJoinBody(body, "hostpass", true)
	}
	if err == nil {
		h.id, err = a.wireHostID(h.id)
	}
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	h.key = key
	cfg, err := a.join(r.Context(), h)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, netmakerJoined{ServerConfig: cfg.serverConfig, RequestedHost: h.public})
}

// serveJoin serves the spec profile's join: the key and the host in the
// body.
func (a *Authenticator) serveJoin(w http.ResponseWriter, r *http.Request) {
	body, err := readJSONBody(w, r)
	var h joiningBody
	if err == nil {
		h, err = parseJoinBody(body, "password", false)
	}
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	out, err := a.join(r.Context(), h)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.WriteResponse(w, r, http.StatusOK, "host joined",
		specJoined{ID: out.id, Networks: out.key.Networks, ServerConfig: out.serverConfig})
}

// joiningBody is what a join request gives.
type joiningBody struct {
	key, id, mac, password string
	// public is the host's JSON as sent, without its secrets, for
	// [Config.HostJoined] and Netmaker's answer.
	public json.RawMessage
}

// joined is what a join made.
type joined struct {
	id           string
	key          EnrollmentKey
	serverConfig any
}

// join joins h and asks [Config.HostJoined] for the answer's server
// config. The host is joined by then whatever the hook answers.
func (a *Authenticator) join(ctx context.Context, h joiningBody) (joined, error) {
	id, err := PrepareHostID(h.id)
	if err != nil {
		return joined{}, err
	}
	k, err := a.JoinHost(ctx, h.key, id, h.mac, h.password)
	if err != nil {
		return joined{}, err
	}
	out := joined{id: id, key: k, serverConfig: struct{}{}}
	if a.cfg.HostJoined == nil {
		return out, nil
	}
	cfg, err := guardedResult(a.guard, ctx, "host joined hook", func(ctx context.Context) (any, error) {
		return a.cfg.HostJoined(ctx, id, k, h.public)
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

// secretHostFields are the fields of a joining host's JSON that hold a
// secret: netclient sends its password and, in its whole configuration,
// its WireGuard and traffic private keys. None is kept, passed on or
// answered.
var secretHostFields = []string{"hostpass", "password", "privatekey", "traffickeyprivate", "key"}

// parseJoinBody reads a joining host from body, a JSON object: its id,
// its password under passField, its MAC address (base64 of its bytes when
// macBase64, as netclient sends a net.HardwareAddr, else text), and, in
// the spec profile, the key.
func parseJoinBody(body []byte, passField string, macBase64 bool) (joiningBody, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return joiningBody{}, requestError("the body must be a JSON object: the joining host")
	}
	known := []string{"id", passField, "macaddress"}
	if !macBase64 {
		known = append(known, "key")
	}
	if err := jsonbody.CheckKeys(body, known); err != nil {
		return joiningBody{}, err
	}
	var h joiningBody
	text := func(name string, dst *string) error {
		raw, ok := fields[name]
		if !ok || bytes.Equal(raw, []byte("null")) {
			return nil
		}
		if json.Unmarshal(raw, dst) != nil {
			return requestError(name + " must be a string")
		}
		return nil
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"id", &h.id}, {passField, &h.password}, {"macaddress", &h.mac}} {
		if err := text(f.name, f.dst); err != nil {
			return joiningBody{}, err
		}
	}
	if !macBase64 {
		if err := text("key", &h.key); err != nil {
			return joiningBody{}, err
		}
		if err := jsonbody.Require("key", h.key); err != nil {
			return joiningBody{}, err
		}
	}
	if err := jsonbody.Require("id", h.id, passField, h.password); err != nil {
		return joiningBody{}, err
	}
	if macBase64 && h.mac != "" {
		b, err := base64.StdEncoding.DecodeString(h.mac)
		if err != nil || len(b) != 6 && len(b) != 8 && len(b) != 20 {
			return joiningBody{}, requestError("macaddress must be the base64 of a MAC address")
		}
		h.mac = net.HardwareAddr(b).String()
	}
	for k := range fields {
		// In any case: encoding/json matches a key to a field so.
		if slices.ContainsFunc(secretHostFields, func(f string) bool { return strings.EqualFold(f, k) }) {
			delete(fields, k)
		}
	}
	h.public, _ = json.Marshal(fields)
	return h, nil
}

// maxTokenLen bounds a Netmaker enrollment token.
const maxTokenLen = 1024

// netmakerTokenKey reads the key out of a Netmaker enrollment token:
// standard base64 of {"server": …, "value": <key>}.
func netmakerTokenKey(token string) (string, error) {
	if len(token) > maxTokenLen {
		return "", requestError("malformed enrollment token: too long")
	}
	b, err := base64.StdEncoding.DecodeString(token)
	if err != nil {
		return "", requestError("malformed enrollment token: not standard base64")
	}
	var t netmakerToken
	if err := json.Unmarshal(b, &t); err != nil || t.Value == "" {
		return "", requestError(`malformed enrollment token: not the base64 of {"server": …, "value": …}`)
	}
	return t.Value, nil
}
