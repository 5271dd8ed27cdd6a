package nmauth

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/nmauth/nmauth/internal/jsonanswer"
	"github.com/nmauth/nmauth/internal/wire"
)

// WireProfile chooses the bytes the handler writes: the spec's field names
// or those of Netmaker's own server. It changes only the bytes on the wire,
// never what is checked or how long anything lives.
type WireProfile int

const (
	// WireSpec writes the spec's format: the envelope {code, message,
	// response} with authToken, userName and preAuthToken inside, and bare
	// init-totp and verify-totp answers. It is the zero value.
	WireSpec WireProfile = iota
	// WireNetmaker writes what Netmaker's server writes, so that its
	// clients (netclient, nmctl, the web UI) work unchanged: every answer
	// is the envelope {Code, Message, Response}; logins answer
	// {ID, AuthToken} for hosts and nodes and {UserName, AuthToken} for
	// users, or {user_name, pre_auth_token} when TOTP is required; errors
	// carry "Response":null. Host ids are UUIDs, and an unknown host id
	// answers 400 as Netmaker does.
	WireNetmaker
)

// String returns the name [ParseWireProfile] accepts.
func (p WireProfile) String() string {
	switch p {
	case WireSpec:
		return "spec"
	case WireNetmaker:
		return "netmaker"
	}
	return fmt.Sprintf("WireProfile(%d)", int(p))
}

// ParseWireProfile returns the profile named "spec" or "netmaker".
func ParseWireProfile(name string) (WireProfile, error) {
	for _, p := range []WireProfile{WireSpec, WireNetmaker} {
		if name == p.String() {
			return p, nil
		}
	}
	return 0, fmt.Errorf("nmauth: unknown wire profile %q (want spec or netmaker)", name)
}

// writeAnswer writes a successful answer of the handler's routes in the
// configured profile. It and [Authenticator.envelope] are the only places
// that decide the bytes of a success.
func (a *Authenticator) writeAnswer(w http.ResponseWriter, kind wire.Answer, v any) {
	if h, ok := v.(HostLogin); ok && kind == wire.AnswerHostLogin {
		if b, ok := a.hostLoginAnswer(h); ok {
			jsonanswer.WriteBytes(w, http.StatusOK, b)
			return
		}
	}
	netmaker := a.cfg.Wire == WireNetmaker
	// The message is read off the answer before the Netmaker profile
	// turns it into Netmaker's payload.
	u, _ := v.(UserLogin)
	msg := wire.Message(kind, netmaker, u.TOTPRequired)
	if netmaker {
		v = netmakerPayload(v)
	}
	jsonanswer.Write(w, http.StatusOK, wire.Body(netmaker, kind, msg, v))
}

// hostLoginAnswer returns the answer of a host login as
// [wire.HostLogin] writes it by hand, when it names no network; else
// false, and writeAnswer encodes it.
func (a *Authenticator) hostLoginAnswer(h HostLogin) ([]byte, bool) {
	if h.Network != "" {
		return nil, false
	}
	return wire.HostLogin(a.cfg.Wire == WireNetmaker, h.ID, h.AuthToken)
}

// WriteResponse answers r with status, message and payload in the active
// wire profile's envelope, for an application's own routes beside the
// handler: {"code","message","response"} in [WireSpec], where a nil
// payload leaves "response" out, and {"Code","Message","Response"} in
// [WireNetmaker]. payload is encoded with encoding/json as it is, so its
// field names are the application's. It takes w and r as
// [Authenticator.WriteError] does, which writes errors instead and picks
// their status.
func (a *Authenticator) WriteResponse(w http.ResponseWriter, r *http.Request, status int, message string, payload any) {
	jsonanswer.Write(w, status, a.envelope(status, message, payload))
}

// envelope is the profile's envelope around a payload.
func (a *Authenticator) envelope(status int, message string, payload any) any {
	return wire.Envelope(a.cfg.Wire == WireNetmaker, status, message, payload)
}

// netmakerPayload is what Netmaker's server puts in Response for v.
// Enrollment and Completion carry their own tags, which match.
func netmakerPayload(v any) any {
	switch v := v.(type) {
	case HostLogin:
		return wire.NetmakerLogin{ID: v.ID, AuthToken: v.AuthToken}
	case UserLogin:
		if v.TOTPRequired {
			return wire.NetmakerPreAuth{UserName: v.UserName, PreAuthToken: v.PreAuthToken}
		}
		return wire.NetmakerUserLogin{UserName: v.UserName, AuthToken: v.AuthToken, RecoveryCodesLeft: v.RecoveryCodesLeft}
	}
	return v
}

// wireError gives an error its status and message in the configured
// profile: [errorStatus], except that Netmaker's clients are told an
// unknown host apart from a wrong password with 400, as Netmaker's server
// does. The body is the profile's envelope.
func (a *Authenticator) wireError(err error) (int, any) {
	status, msg := errorStatus(err)
	if a.cfg.Wire == WireNetmaker && errors.Is(err, ErrUnknownHost) {
		status, msg = http.StatusBadRequest, "unknown host"
	}
	return status, a.envelope(status, msg, nil)
}

// wireHostID prepares a host id from a login body. Netmaker's host and
// node ids are UUIDs, matched in any case: the canonical lower-case form is
// what the Store is asked for, and anything else is [ErrInvalidHost].
func (a *Authenticator) wireHostID(id string) (string, error) {
	if id, ok := wire.HostID(a.cfg.Wire == WireNetmaker, id); ok {
		return id, nil
	}
	return "", ErrInvalidHost
}

// nodeLoginPaths are the node login routes: the spec's, and in the
// Netmaker profile also the one netclient's older releases call.
func (a *Authenticator) nodeLoginPaths() []string {
	paths := []string{"/api/nodes/{network}/authenticate"}
	if a.cfg.Wire == WireNetmaker {
		paths = append(paths, "/api/nodes/adm/{network}/authenticate")
	}
	return paths
}
