package sso

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/nmauth/nmauth"
)

// resultPoll is how often the replica holding a headless login looks for
// its result, which the replica that took the callback stores.
const resultPoll = 300 * time.Millisecond

// The results of a headless login as the Store keeps them: the user to log
// in, or why not. The token itself is never stored: the replica that holds
// the websocket issues it, so that no token rests in the database.
const (
	resultUser    = "user:"
	resultRefusal = "refused:"
)

// errTerminalSecondFactor refuses a headless login of a user with a
// second factor, which a terminal cannot be asked for.
var errTerminalSecondFactor = errors.New("sso: this user has a second factor, which a terminal login cannot ask for; log in with the password and code")

// serveHeadless runs nmctl's headless login over a websocket: the first
// text message is the URL to visit; once the provider sends the browser
// back, to this replica or another, the message "JWT: <token>" carries
// the user token, and the socket closes normally. A login that cannot end
// in a user token (refused, or a user whose second factor a terminal
// cannot answer) gets a message saying why instead.
func (s *SSO) serveHeadless(w http.ResponseWriter, r *http.Request) {
	op := s.ready(w, r)
	if op == nil {
		return
	}
	if n := s.headless.Add(1); n > int64(s.cfg.MaxHeadless) {
		s.headless.Add(-1)
		s.cfg.Auth.WriteError(w, r, &nmauth.RetryError{Reason: nmauth.ErrOverloaded, RetryAfter: 10 * time.Second})
		return
	}
	defer s.headless.Add(-1)
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer conn.CloseNow()
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.PendingTTL)
	defer cancel()
	// Reading notices the client going away; nmctl sends nothing else.
	ctx = conn.CloseRead(ctx)
	state, authURL, err := s.begin(ctx, op, "", true)
	if err != nil {
		conn.Close(websocket.StatusTryAgainLater, "the server cannot start a login now")
		return
	}
	if err := conn.Write(ctx, websocket.MessageText, []byte(authURL)); err != nil {
		return
	}
	tick := time.NewTicker(resultPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			conn.Close(websocket.StatusNormalClosure, "")
			return
		case <-tick.C:
		}
		result, err := s.cfg.Store.TakeResult(ctx, state, time.Now())
		if errors.Is(err, nmauth.ErrNotFound) || errors.Is(err, context.Canceled) {
			continue
		}
		if err == nil {
			conn.Write(ctx, websocket.MessageText, []byte(s.terminalMessage(ctx, result)))
		}
		conn.Close(websocket.StatusNormalClosure, "")
		return
	}
}

// terminalMessage is what nmctl is sent for a stored result: the token of
// the user to log in, or the reason for a refusal.
func (s *SSO) terminalMessage(ctx context.Context, result string) string {
	name, ok := strings.CutPrefix(result, resultUser)
	if !ok {
		return "login refused: " + strings.TrimPrefix(result, resultRefusal)
	}
	login, _, err := s.issue(ctx, name)
	switch {
	case err != nil:
		return "login refused: " + strings.TrimPrefix(err.Error(), "sso: ")
	case login.AuthToken == "":
		return "login refused: " + strings.TrimPrefix(errTerminalSecondFactor.Error(), "sso: ")
	}
	return "JWT: " + login.AuthToken
}

// answerHeadless stores the end of a headless login for its websocket and
// tells the browser whether the terminal is logged in.
func (s *SSO) answerHeadless(w http.ResponseWriter, r *http.Request, state, name string, status int, err error) {
	if err == nil {
		if info, lerr := s.cfg.Auth.LookupUser(r.Context(), name); lerr == nil && info.TOTPEnabled {
			status, err = http.StatusForbidden, errTerminalSecondFactor
		}
	}
	result := resultUser + name
	if err != nil {
		result = resultRefusal + strings.TrimPrefix(err.Error(), "sso: ")
	}
	if perr := s.cfg.Store.PutResult(r.Context(), state, result, time.Now().Add(s.cfg.PendingTTL)); perr != nil {
		s.cfg.Auth.WriteError(w, r, nmauth.ErrStoreUnavailable)
		return
	}
	if err != nil {
		s.refuse(w, r, status, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write([]byte("Logged in: return to the terminal.\n"))
}
