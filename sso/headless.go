package sso

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
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
// text message is the URL to visit, on its first line, and on its second
// the login's code (see [userCode]), which nmctl prints as it is. Once the
// provider sends the browser back, to this replica or another, the
// callback shows the same code and asks the person there to confirm the
// login (serveConfirm); only then does the message "JWT: <token>" carry
// the user token, and the socket closes normally. A login that cannot end
// in a user token (refused or not confirmed, or a user whose second
// factor a terminal cannot answer) gets a message saying why instead, and
// one nobody confirms ends with the socket's time, PendingTTL, and no
// token. A client group holds a share of the replica's websockets (see
// [roomFor]): past it, 429; when all are held, a group that holds none
// takes the place of the oldest login of the group that holds the most,
// which is told to start again.
func (s *SSO) serveHeadless(w http.ResponseWriter, r *http.Request) {
	op := s.ready(w, r)
	if op == nil {
		return
	}
	group := s.groupOf(r.Context())
	sk, err := s.headless.take(group)
	if err != nil {
		s.refuseBegin(w, r, err)
		return
	}
	defer s.headless.release(sk)
	// The login begins before the upgrade, so that a refusal is an answer
	// in the envelope, with Retry-After.
	state, authURL, err := s.begin(r.Context(), op, "", true, group)
	if err != nil {
		s.refuseBegin(w, r, err)
		return
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer conn.CloseNow()
	// Reading notices the client going away; nmctl sends nothing else.
	// The login's time is a timer of its own: a cancelled read would drop
	// the connection without a close frame.
	ctx := conn.CloseRead(r.Context())
	expired := time.NewTimer(s.cfg.PendingTTL)
	defer expired.Stop()
	first := authURL + "\n and confirm there the code " + userCode(state)
	if err := conn.Write(ctx, websocket.MessageText, []byte(first)); err != nil {
		return
	}
	tick := time.NewTicker(resultPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-expired.C:
			conn.Close(websocket.StatusNormalClosure, "the login was not completed in time")
			return
		case <-sk.pushed:
			// Its pending login goes too, so that its place is free
			// there as well; a callback for it finds no state.
			s.cfg.Store.TakeState(ctx, state, time.Now())
			conn.Write(ctx, websocket.MessageText, []byte("login refused: "+strings.TrimPrefix(errPushedOut.Error(), "sso: ")))
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

// answerHeadless ends the callback of a headless login: a refusal is
// stored for the websocket and answered; a login is not handed to the
// websocket yet but shown to the person at the browser, with the code the
// terminal printed, to confirm or refuse (serveConfirm). The confirmation
// waits in the Store's results under a key of its own, bound to this
// browser by a cookie, until the state's expiry.
func (s *SSO) answerHeadless(w http.ResponseWriter, r *http.Request, state string, p Pending, name string, status int, err error) {
	if err == nil {
		if info, lerr := s.auth.Admin().LookupUser(r.Context(), name); lerr == nil && info.TOTPEnabled {
			status, err = http.StatusForbidden, errTerminalSecondFactor
		}
	}
	if err != nil {
		result := resultRefusal + strings.TrimPrefix(err.Error(), "sso: ")
		if perr := s.cfg.Store.PutResult(r.Context(), state, result, time.Now().Add(s.cfg.PendingTTL)); perr != nil {
			s.auth.WriteError(w, r, nmauth.ErrStoreUnavailable)
			return
		}
		s.refuse(w, r, status, err)
		return
	}
	token, binding := randomString(), randomString()
	c := confirmation{State: state, User: name, Binding: digest(binding), Expires: p.Expires}
	if perr := s.cfg.Store.PutResult(r.Context(), confirmKey(token), c.encode(), p.Expires); perr != nil {
		s.auth.WriteError(w, r, nmauth.ErrStoreUnavailable)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: confirmCookie, Value: binding, Path: "/api/oauth/", HttpOnly: true,
		Secure: s.secure, SameSite: http.SameSiteStrictMode, MaxAge: max(1, int(time.Until(p.Expires)/time.Second))})
	page(w, http.StatusOK, confirmPage, confirmData{User: name, Code: userCode(state), Token: token})
}

// serveConfirm takes the answer of the person at the browser to a
// headless login: confirmed, the login goes to its websocket, which issues
// the token; refused, the websocket is told so. The form's token names the
// confirmation, once; the cookie set with it must come from the same
// browser, or nothing changes.
func (s *SSO) serveConfirm(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	token, answer := r.PostFormValue("token"), r.PostFormValue("answer")
	if token == "" || (answer != "confirm" && answer != "refuse") {
		s.refuse(w, r, http.StatusBadRequest, errConfirmForm)
		return
	}
	ctx := r.Context()
	text, err := s.cfg.Store.TakeResult(ctx, confirmKey(token), time.Now())
	switch {
	case errors.Is(err, nmauth.ErrNotFound):
		s.refuse(w, r, http.StatusBadRequest, errConfirmation)
		return
	case err != nil:
		s.auth.WriteError(w, r, fmt.Errorf("%w: %w", nmauth.ErrStoreUnavailable, err))
		return
	}
	c, err := decodeConfirmation(text)
	if err != nil {
		s.auth.WriteError(w, r, fmt.Errorf("%w: %w", nmauth.ErrDataFault, err))
		return
	}
	cookie, cerr := r.Cookie(confirmCookie)
	if cerr != nil || subtle.ConstantTimeCompare([]byte(digest(cookie.Value)), []byte(c.Binding)) != 1 {
		// Put back as it was: the browser that signed in may still answer.
		if perr := s.cfg.Store.PutResult(ctx, confirmKey(token), text, c.Expires); perr != nil {
			s.auth.WriteError(w, r, fmt.Errorf("%w: %w", nmauth.ErrStoreUnavailable, perr))
			return
		}
		s.refuse(w, r, http.StatusBadRequest, errBinding)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: confirmCookie, Path: "/api/oauth/", MaxAge: -1, HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteStrictMode})
	result, status, msg := resultUser+c.User, http.StatusOK, "Logged in: return to the terminal."
	if answer == "refuse" {
		result, status, msg = resultRefusal+"the person signed in at the provider refused it", http.StatusOK, "Refused: the terminal gets no login."
	}
	if err := s.cfg.Store.PutResult(ctx, c.State, result, c.Expires); err != nil {
		s.auth.WriteError(w, r, fmt.Errorf("%w: %w", nmauth.ErrStoreUnavailable, err))
		return
	}
	page(w, status, donePage, msg)
}
