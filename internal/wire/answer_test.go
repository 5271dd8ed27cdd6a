package wire

import "testing"

// TestMessage: each route's message, and a login that needs a second
// factor in the words of each profile.
func TestMessage(t *testing.T) {
	for _, tc := range []struct {
		kind                   Answer
		netmaker, totpRequired bool
		want                   string
	}{
		{AnswerHostLogin, false, false, "host authenticated"},
		{AnswerHostLogin, true, true, "host authenticated"},
		{AnswerNodeLogin, true, false, "node authenticated"},
		{AnswerUserLogin, false, false, "user authenticated"},
		{AnswerUserLogin, true, false, "user authenticated"},
		{AnswerUserLogin, false, true, "TOTP required: send a code to verify-totp with the pre-auth token"},
		{AnswerUserLogin, true, true, "W1R3: TOTP required"},
		{AnswerInitTOTP, false, false, "TOTP enrollment started"},
		{AnswerCompleteTOTP, true, false, "TOTP enabled"},
		{AnswerVerifyTOTP, false, false, "user authenticated with TOTP"},
		{Answer(99), false, false, "ok"},
	} {
		if got := Message(tc.kind, tc.netmaker, tc.totpRequired); got != tc.want {
			t.Errorf("Message(%d, %v, %v) = %q, want %q", tc.kind, tc.netmaker, tc.totpRequired, got, tc.want)
		}
	}
}

// TestBody: the spec profile writes init-totp and verify-totp bare, and
// every other answer, and every answer of Netmaker's, in the envelope.
func TestBody(t *testing.T) {
	payload := struct{ X int }{1}
	for _, kind := range []Answer{AnswerHostLogin, AnswerNodeLogin, AnswerUserLogin, AnswerInitTOTP, AnswerCompleteTOTP, AnswerVerifyTOTP} {
		bare := kind == AnswerInitTOTP || kind == AnswerVerifyTOTP
		switch got := Body(false, kind, "m", payload).(type) {
		case SpecEnvelope:
			if bare || got != (SpecEnvelope{Code: 200, Message: "m", Response: payload}) {
				t.Errorf("spec, answer %d: %+v", kind, got)
			}
		default:
			if !bare || got != any(payload) {
				t.Errorf("spec, answer %d: %+v", kind, got)
			}
		}
		if got, ok := Body(true, kind, "m", payload).(NetmakerEnvelope); !ok || got != (NetmakerEnvelope{Code: 200, Message: "m", Response: payload}) {
			t.Errorf("netmaker, answer %d: %+v", kind, got)
		}
	}
}
