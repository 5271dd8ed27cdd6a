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

// serveHeadless runs nmctl's headless login over a websocket: the first
// text message is the URL to visit; once the provider sends the browser
// back, to this replica or another, the message "JWT: <token>" carries
// the user token, and the socket closes normally. A login that cannot end
// in a user token (refused, or a user whose second factor a terminal
// cannot answer) gets a message saying why instead.
func (s *SSO) serveHeadless(w http.ResponseWriter, r *http.Request) {
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
	state, authURL, err := s.begin(ctx, "", true)
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
		text, err := s.cfg.Store.TakeResult(ctx, state, time.Now())
		if errors.Is(err, nmauth.ErrNotFound) || errors.Is(err, context.Canceled) {
			continue
		}
		if err == nil {
			conn.Write(ctx, websocket.MessageText, []byte(text))
		}
		conn.Close(websocket.StatusNormalClosure, "")
		return
	}
}

// answerHeadless stores the end of a headless login for its websocket and
// tells the browser that the terminal has it.
func (s *SSO) answerHeadless(w http.ResponseWriter, r *http.Request, state string, login nmauth.UserLogin, err error) {
	text := "JWT: " + login.AuthToken
	switch {
	case err != nil:
		text = "login refused: " + strings.TrimPrefix(err.Error(), "sso: ")
	case login.AuthToken == "":
		text = "login refused: this user has a second factor, which a terminal login cannot ask for; log in with the password and code"
	}
	if perr := s.cfg.Store.PutResult(r.Context(), state, text, time.Now().Add(s.cfg.PendingTTL)); perr != nil {
		s.cfg.Auth.WriteError(w, r, nmauth.ErrStoreUnavailable)
		return
	}
	if err != nil || login.AuthToken == "" {
		s.refuse(w, r, http.StatusForbidden, errors.New(text))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write([]byte("Logged in: return to the terminal.\n"))
}
