// Package wire holds the shapes of what nmauth's handler reads and writes
// in its two wire profiles: the bodies of the login, TOTP and access-token
// routes, the spec's envelope {code, message, response} and that of
// Netmaker's server {Code, Message, Response}, the messages of successful
// answers, the payloads of Netmaker's logins and of its access-token
// listing, and the bytes of a host login's answer written by hand. It
// knows nothing of the Authenticator: its caller says which profile is
// active and which route an answer is for.
package wire

import (
	"strings"
	"time"

	"github.com/nmauth/nmauth/internal/names"
)

// SpecEnvelope is the spec's generic result: code, message and a payload.
type SpecEnvelope struct {
	Code     int    `json:"code"`
	Message  string `json:"message"`
	Response any    `json:"response,omitempty"`
}

// NetmakerEnvelope is the envelope of Netmaker's server: its Go field
// names, no tags, and Response always present.
type NetmakerEnvelope struct {
	Code     int
	Message  string
	Response any
}

// Envelope is the profile's envelope around a payload: Netmaker's when
// netmaker is set, else the spec's.
func Envelope(netmaker bool, status int, message string, payload any) any {
	if netmaker {
		return NetmakerEnvelope{Code: status, Message: message, Response: payload}
	}
	return SpecEnvelope{Code: status, Message: message, Response: payload}
}

// HostID is the host id of a login body as the profile takes it: as it
// is in the spec profile; in Netmaker's, whose host and node ids are
// UUIDs matched in any case, in the canonical lower-case form, and false
// for anything but a UUID.
func HostID(netmaker bool, id string) (string, bool) {
	if !netmaker {
		return id, true
	}
	if !names.IsUUID(id) {
		return "", false
	}
	return strings.ToLower(id), true
}

// NetmakerLogin is the answer of a Netmaker host or node login.
type NetmakerLogin struct {
	ID        string
	AuthToken string
}

// NetmakerUserLogin is the answer of a Netmaker user login without TOTP
// and of verify-totp. RecoveryCodesLeft is nmauth's own and only present
// after a recovery code was used; clients that do not know it skip it.
type NetmakerUserLogin struct {
	UserName          string
	AuthToken         string
	RecoveryCodesLeft *int `json:",omitempty"`
}

// NetmakerPreAuth is the answer of a Netmaker user login with TOTP on.
type NetmakerPreAuth struct {
	UserName     string `json:"user_name"`
	PreAuthToken string `json:"pre_auth_token"`
}

// NetmakerAccessToken is an access token as Netmaker's server lists it,
// with nmauth's scope after its fields.
type NetmakerAccessToken struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	UserName  string    `json:"user_name"`
	ExpiresAt time.Time `json:"expires_at"`
	LastUsed  time.Time `json:"last_used"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	ReadOnly  bool      `json:"read_only"`
	Networks  []string  `json:"networks"`
}

// HostLogin returns the bytes that encoding/json writes for the envelope
// of a host login's answer, message "host authenticated", written out by
// hand, when token and id are plain JSON (see [PlainJSON]); else false,
// and the caller encodes it. A test holds the two to the same bytes.
func HostLogin(netmaker bool, id, token string) ([]byte, bool) {
	if !PlainJSON(token) || !PlainJSON(id) {
		return nil, false
	}
	b := make([]byte, 0, 96+len(token)+len(id))
	if netmaker {
		b = append(b, `{"Code":200,"Message":"host authenticated","Response":{"ID":"`...)
		b = append(append(b, id...), `","AuthToken":"`...)
		b = append(append(b, token...), "\"}}\n"...)
		return b, true
	}
	b = append(b, `{"code":200,"message":"host authenticated","response":{"authToken":"`...)
	b = append(append(b, token...), `","id":"`...)
	b = append(append(b, id...), "\"}}\n"...)
	return b, true
}

// PlainJSON reports whether encoding/json writes s as its own bytes in
// quotes: printable ASCII without '"', '\\' and the '<', '>' and '&' it
// escapes for HTML.
func PlainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}
