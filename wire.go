package nmauth

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
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

// answerKind says which route an answer is for: the same value is written
// differently by route and profile.
type answerKind int

const (
	answerHostLogin answerKind = iota
	answerNodeLogin
	answerUserLogin
	answerInitTOTP
	answerCompleteTOTP
	answerVerifyTOTP
)

// specEnvelope is the spec's generic result: code, message and a payload,
// which WriteResponse and WriteError write in the spec's profile.
type specEnvelope struct {
	Code     int    `json:"code"`
	Message  string `json:"message"`
	Response any    `json:"response,omitempty"`
}

// netmakerEnvelope is the envelope of Netmaker's server: its Go field
// names, no tags, and Response always present.
type netmakerEnvelope struct {
	Code     int
	Message  string
	Response any
}

// netmakerLogin is the answer of a Netmaker host or node login.
type netmakerLogin struct {
	ID        string
	AuthToken string
}

// netmakerUserLogin is the answer of a Netmaker user login without TOTP
// and of verify-totp. RecoveryCodesLeft is nmauth's own and only present
// after a recovery code was used; clients that do not know it skip it.
type netmakerUserLogin struct {
	UserName          string
	AuthToken         string
	RecoveryCodesLeft *int `json:",omitempty"`
}

// netmakerPreAuth is the answer of a Netmaker user login with TOTP on.
type netmakerPreAuth struct {
	UserName     string `json:"user_name"`
	PreAuthToken string `json:"pre_auth_token"`
}

// writeAnswer writes a successful answer of the handler's routes in the
// configured profile. It and [Authenticator.envelope] are the only places
// that decide the bytes of a success.
func (a *Authenticator) writeAnswer(w http.ResponseWriter, kind answerKind, v any) {
	if h, ok := v.(HostLogin); ok && kind == answerHostLogin {
		if b, ok := a.hostLoginAnswer(h); ok {
			writeJSONBytes(w, http.StatusOK, b)
			return
		}
	}
	// The message is read off the answer before the Netmaker profile
	// turns it into Netmaker's payload.
	msg := a.answerMessage(kind, v)
	if a.cfg.Wire == WireNetmaker {
		v = netmakerPayload(v)
	} else if kind == answerInitTOTP || kind == answerVerifyTOTP {
		writeJSON(w, http.StatusOK, v)
		return
	}
	writeJSON(w, http.StatusOK, a.envelope(http.StatusOK, msg, v))
}

// hostLoginAnswer returns the bytes that encoding/json writes for the
// answer of a host login, written out by hand, when its token and id are
// plain JSON (see plainJSON) and it names no network; else false, and
// writeAnswer encodes it. A test holds the two to the same bytes.
func (a *Authenticator) hostLoginAnswer(h HostLogin) ([]byte, bool) {
	if !plainJSON(h.AuthToken) || !plainJSON(h.ID) || h.Network != "" {
		return nil, false
	}
	b := make([]byte, 0, 96+len(h.AuthToken)+len(h.ID))
	if a.cfg.Wire == WireNetmaker {
		b = append(b, `{"Code":200,"Message":"host authenticated","Response":{"ID":"`...)
		b = append(append(b, h.ID...), `","AuthToken":"`...)
		b = append(append(b, h.AuthToken...), "\"}}\n"...)
		return b, true
	}
	b = append(b, `{"code":200,"message":"host authenticated","response":{"authToken":"`...)
	b = append(append(b, h.AuthToken...), `","id":"`...)
	b = append(append(b, h.ID...), "\"}}\n"...)
	return b, true
}

// plainJSON reports whether encoding/json writes s as its own bytes in
// quotes: printable ASCII without '"', '\\' and the '<', '>' and '&' it
// escapes for HTML.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
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
	writeJSON(w, status, a.envelope(status, message, payload))
}

// envelope is the profile's envelope around a payload.
func (a *Authenticator) envelope(status int, message string, payload any) any {
	if a.cfg.Wire == WireNetmaker {
		return netmakerEnvelope{Code: status, Message: message, Response: payload}
	}
	return specEnvelope{Code: status, Message: message, Response: payload}
}

// netmakerPayload is what Netmaker's server puts in Response for v.
// Enrollment and Completion carry their own tags, which match.
func netmakerPayload(v any) any {
	switch v := v.(type) {
	case HostLogin:
		return netmakerLogin{ID: v.ID, AuthToken: v.AuthToken}
	case UserLogin:
		if v.TOTPRequired {
			return netmakerPreAuth{UserName: v.UserName, PreAuthToken: v.PreAuthToken}
		}
		return netmakerUserLogin{UserName: v.UserName, AuthToken: v.AuthToken, RecoveryCodesLeft: v.RecoveryCodesLeft}
	}
	return v
}

// answerMessage is the message of a successful answer. A login that
// needs a second factor says so in the words of the profile: Netmaker's
// server answers "W1R3: TOTP required" there.
func (a *Authenticator) answerMessage(kind answerKind, v any) string {
	switch kind {
	case answerHostLogin:
		return "host authenticated"
	case answerNodeLogin:
		return "node authenticated"
	case answerUserLogin:
		switch u, _ := v.(UserLogin); {
		case u.TOTPRequired && a.cfg.Wire == WireNetmaker:
			return "W1R3: TOTP required"
		case u.TOTPRequired:
			return "TOTP required: send a code to verify-totp with the pre-auth token"
		}
		return "user authenticated"
	case answerInitTOTP:
		return "TOTP enrollment started"
	case answerCompleteTOTP:
		return "TOTP enabled"
	case answerVerifyTOTP:
		return "user authenticated with TOTP"
	}
	return "ok"
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
	if a.cfg.Wire != WireNetmaker {
		return id, nil
	}
	if !isUUID(id) {
		return "", ErrInvalidHost
	}
	return strings.ToLower(id), nil
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
