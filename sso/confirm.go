package sso

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// The confirmation of a headless login (see serveConfirm).
var (
	errConfirmForm  = errors.New("sso: a confirmation needs its token and an answer, confirm or refuse")
	errConfirmation = errors.New("sso: unknown, expired or used confirmation")
)

// confirmCookie binds a headless login's confirmation to the browser that
// signed in at the provider.
const confirmCookie = "nmauth_sso_confirm"

// confirmKey is the key of a confirmation among the Store's results: a
// digest of the form's token, which no state (random base64) can equal.
func confirmKey(token string) string { return "confirm:" + digest(token) }

// confirmation is a headless login waiting for the person at the browser:
// the state of its websocket, the user to log in, the digest of the
// browser's cookie, and the state's expiry.
type confirmation struct {
	State, User, Binding string
	Expires              time.Time
}

func (c confirmation) encode() string {
	return url.Values{"state": {c.State}, "user": {c.User}, "binding": {c.Binding},
		"expires": {strconv.FormatInt(c.Expires.UnixNano(), 10)}}.Encode()
}

func decodeConfirmation(text string) (confirmation, error) {
	v, err := url.ParseQuery(text)
	if err != nil {
		return confirmation{}, err
	}
	ns, err := strconv.ParseInt(v.Get("expires"), 10, 64)
	if err != nil || v.Get("state") == "" || v.Get("user") == "" || v.Get("binding") == "" {
		return confirmation{}, errors.New("sso: a stored confirmation is malformed")
	}
	return confirmation{State: v.Get("state"), User: v.Get("user"), Binding: v.Get("binding"), Expires: time.Unix(0, ns)}, nil
}

// userCodeAlphabet is RFC 8628's: consonants only, so that a code spells
// no word, read and typed alike in any case.
const userCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"

// userCode is the short code of a headless login, as RFC 8628's user_code:
// the terminal prints it and the confirmation page shows it, so that the
// person confirms only the login of their own terminal. It is derived from
// the state, which both sides know, eight letters of 20 (36 bits), written
// XXXX-XXXX.
func userCode(state string) string {
	sum := sha256.Sum256([]byte("nmauth headless code\x00" + state))
	n := binary.BigEndian.Uint64(sum[:8])
	code := make([]byte, 0, 9)
	for i := range 8 {
		if i == 4 {
			code = append(code, '-')
		}
		code = append(code, userCodeAlphabet[n%20])
		n /= 20
	}
	return string(code)
}

type confirmData struct {
	User, Code, Token string
}

var confirmPage = template.Must(template.New("confirm").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Confirm the terminal's login</title></head>
<body>
<h1>Confirm the terminal's login</h1>
<p>A terminal asks to log in as <strong>{{.User}}</strong>.</p>
<p>Confirm only if you started this login yourself, in your own terminal, and it shows this code:</p>
<p id="code" style="font: bold 2em monospace">{{.Code}}</p>
<p>If you did not start it, or the code differs, refuse: someone else would get your login.</p>
<form method="post" action="confirm">
<input type="hidden" name="token" value="{{.Token}}">
<button type="submit" name="answer" value="confirm">Confirm</button>
<button type="submit" name="answer" value="refuse">Refuse</button>
</form>
</body></html>
`))

var donePage = template.Must(template.New("done").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.}}</title></head>
<body><p id="result">{{.}}</p></body></html>
`))

// page answers a page of the headless login: never cached, never framed
// (a confirmation button under another site's page would be clicked
// blind), no script, no referrer (the callback's URL holds the code).
func page(w http.ResponseWriter, status int, t *template.Template, data any) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	t.Execute(w, data)
}
