package wire

import "net/http"

// Answer names the route a successful answer is for: the same value is
// written differently by route and profile.
type Answer int

// The answers whose bytes depend on their route.
const (
	AnswerHostLogin Answer = iota
	AnswerNodeLogin
	AnswerUserLogin
	AnswerInitTOTP
	AnswerCompleteTOTP
	AnswerVerifyTOTP
)

// Message is the message of a successful answer of kind. A user login
// that needs a second factor (totpRequired) says so in the words of the
// profile: Netmaker's server answers "W1R3: TOTP required" there.
func Message(kind Answer, netmaker, totpRequired bool) string {
	switch kind {
	case AnswerHostLogin:
		return "host authenticated"
	case AnswerNodeLogin:
		return "node authenticated"
	case AnswerUserLogin:
		switch {
		case totpRequired && netmaker:
			return "W1R3: TOTP required"
		case totpRequired:
			return "TOTP required: send a code to verify-totp with the pre-auth token"
		}
		return "user authenticated"
	case AnswerInitTOTP:
		return "TOTP enrollment started"
	case AnswerCompleteTOTP:
		return "TOTP enabled"
	case AnswerVerifyTOTP:
		return "user authenticated with TOTP"
	}
	return "ok"
}

// Body is what is encoded for a successful answer of kind with message
// and payload: the spec profile's init-totp and verify-totp answers are
// the payload bare; every other is the profile's [Envelope], status 200.
func Body(netmaker bool, kind Answer, message string, payload any) any {
	if !netmaker && (kind == AnswerInitTOTP || kind == AnswerVerifyTOTP) {
		return payload
	}
	return Envelope(netmaker, http.StatusOK, message, payload)
}
