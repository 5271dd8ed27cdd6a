package wire

import (
	"time"

	"github.com/nmauth/nmauth/internal/jsonbody"
)

// HostLoginBody is the body of host login and of node login.
type HostLoginBody struct {
	ID         string `json:"id"`
	MACAddress string `json:"macaddress"`
	Password   string `json:"password"`
}

// hostLoginKeys are the JSON names of HostLoginBody's fields, in order.
var hostLoginKeys = []string{"id", "macaddress", "password"}

// ParseFlat fills b from body when body is one JSON object of string
// values, each key one of b's fields at most once, each string without
// an escape or a control character and in valid UTF-8, with nothing but
// JSON whitespace around its tokens: the body every netclient sends (see
// [jsonbody.Flat]). Such a body [jsonbody.Decode] takes too, with the same
// fields, so ParseFlat only saves its work. For any other body it reports
// false and leaves b as it was, for jsonbody.Decode to judge.
func (b *HostLoginBody) ParseFlat(body []byte) bool {
	var v [3]string
	if !jsonbody.Flat(body, hostLoginKeys, v[:]) {
		return false
	}
	*b = HostLoginBody{ID: v[0], MACAddress: v[1], Password: v[2]}
	return true
}

// UserLoginBody is the body of user login.
type UserLoginBody struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// TOTPBody is the body of complete-totp and verify-totp.
type TOTPBody struct {
	URL       string `json:"otp_auth_url"`
	Signature string `json:"otp_auth_url_signature"`
	TOTP      string `json:"totp"`
	// CurrentTOTP is, at complete-totp for a user who already has TOTP
	// on, a code of the current secret or a recovery code.
	CurrentTOTP string `json:"current_totp,omitempty"`
}

// AccessTokenBody is the body of access-token creation, in the field
// names of Netmaker's server in both wire profiles. The fields a server
// sets (id, created_by, created_at, last_used), which Netmaker's clients
// send empty, are ignored.
type AccessTokenBody struct {
	Name      string    `json:"name"`
	UserName  string    `json:"user_name"`
	ExpiresAt time.Time `json:"expires_at"`
	ReadOnly  bool      `json:"read_only"`
	Networks  []string  `json:"networks"`
}
