package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nmauth/nmauth"
)

// maxAnswerBytes bounds what is read of one answer.
const maxAnswerBytes = 1 << 20

// api builds requests to the routes of nmauthd and reads their answers.
// Requests take turns over its clients, one per source address.
type api struct {
	base    *url.URL
	clients []*http.Client
	turn    atomic.Uint64
}

func newAPI(base *url.URL, conns, sources int, timeout time.Duration) *api {
	a := &api{base: base}
	for i := range sources {
		a.clients = append(a.clients, newClient(conns, timeout, sourceAddr(i, sources)))
	}
	return a
}

func (a *api) close() {
	for _, c := range a.clients {
		c.CloseIdleConnections()
	}
}

// answer is one response, read to the end so its connection is reused.
type answer struct {
	status     int
	retryAfter string
	body       []byte
}

func (a *api) newRequest(ctx context.Context, method, path, bearer string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base.String()+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	return req, nil
}

func (a *api) do(req *http.Request) (answer, error) { return a.doFrom(req, -1) }

// doFrom sends req from source address from (modulo their number), or
// from the next in turn when from is negative.
func (a *api) doFrom(req *http.Request, from int) (answer, error) {
	i := uint64(from)
	if from < 0 {
		i = a.turn.Add(1) - 1
	}
	resp, err := a.clients[i%uint64(len(a.clients))].Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return answer{}, err
	}
	// Drain what is past the limit so the connection can be reused.
	io.Copy(io.Discard, resp.Body)
	return answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: body}, nil
}

// call sends one request and decodes a 200 answer into out; any other
// status is an error that carries the server's message.
func (a *api) call(ctx context.Context, method, path, bearer string, body, out any) error {
	req, err := a.newRequest(ctx, method, path, bearer, body)
	if err != nil {
		return err
	}
	ans, err := a.do(req)
	if err != nil {
		return err
	}
	if ans.status != http.StatusOK {
		var env struct {
			Message string `json:"message"`
		}
		json.Unmarshal(ans.body, &env)
		return &statusError{path: path, status: ans.status, message: env.Message, retryAfter: ans.retryAfter}
	}
	if err := json.Unmarshal(ans.body, out); err != nil {
		return fmt.Errorf("%s: decoding answer: %w", path, err)
	}
	return nil
}

// statusError is an answer other than 200 to a set-up call.
type statusError struct {
	path       string
	status     int
	message    string
	retryAfter string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s: %d %s", e.path, e.status, e.message)
}

// wait is how long the server asked to wait before trying again, or 0
// when the answer is not one to retry.
func (e *statusError) wait() time.Duration {
	if e.status != http.StatusTooManyRequests && e.status != http.StatusServiceUnavailable {
		return 0
	}
	s, err := strconv.Atoi(e.retryAfter)
	if err != nil || s < 1 {
		s = 1
	}
	return time.Duration(s) * time.Second
}

// envelope is the spec's envelope with its payload left to decode.
type envelope struct {
	Code     int             `json:"code"`
	Message  string          `json:"message"`
	Response json.RawMessage `json:"response"`
}

func userPath(name, action string) string {
	return "/api/users/" + url.PathEscape(name) + "/auth/" + action
}

func (a *api) loginRequest(ctx context.Context, user, password string) (*http.Request, error) {
	return a.newRequest(ctx, http.MethodPost, "/api/users/adm/authenticate", "", userAuthRequest{Username: user, Password: password})
}

// login logs a user in once, retrying while the server answers 429 or 503.
func (a *api) login(ctx context.Context, user, password string) (nmauth.UserLogin, error) {
	for attempt := 0; ; attempt++ {
		var env envelope
		err := a.call(ctx, http.MethodPost, "/api/users/adm/authenticate", "", userAuthRequest{Username: user, Password: password}, &env)
		if err == nil {
			var out nmauth.UserLogin
			if err := json.Unmarshal(env.Response, &out); err != nil {
				return out, fmt.Errorf("login of %s: decoding answer: %w", user, err)
			}
			return out, nil
		}
		se, ok := err.(*statusError)
		if !ok || se.wait() == 0 || attempt == 5 {
			return nmauth.UserLogin{}, fmt.Errorf("login of %s: %w", user, err)
		}
		if err := sleep(ctx, se.wait()); err != nil {
			return nmauth.UserLogin{}, err
		}
	}
}

// userToken logs a user without TOTP in and returns the user token.
func (a *api) userToken(ctx context.Context, user, password string) (string, error) {
	out, err := a.login(ctx, user, password)
	if err != nil {
		return "", err
	}
	if out.TOTPRequired || out.AuthToken == "" {
		return "", fmt.Errorf("user %s has TOTP on: whoami needs a user without it", user)
	}
	return out.AuthToken, nil
}

func (a *api) initTOTP(ctx context.Context, bearer, user string) (nmauth.Enrollment, error) {
	var out nmauth.Enrollment
	err := a.call(ctx, http.MethodPost, userPath(user, "init-totp"), bearer, nil, &out)
	return out, err
}

func (a *api) completeTOTP(ctx context.Context, bearer, user string, e nmauth.Enrollment, code string) error {
	var env envelope
	body := totpRequest{URL: e.URL, Signature: e.Signature, TOTP: code}
	return a.call(ctx, http.MethodPost, userPath(user, "complete-totp"), bearer, body, &env)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// The request bodies of the wire spec that the load sends.
type (
	userAuthRequest struct {
		Username string `json:"username"`
		Password string `json:"password"`
	}
	hostAuthRequest struct {
		ID         string `json:"id"`
		MACAddress string `json:"macaddress"`
		Password   string `json:"password"`
	}
	totpRequest struct {
		URL       string `json:"otp_auth_url"`
		Signature string `json:"otp_auth_url_signature"`
		TOTP      string `json:"totp"`
	}
)
