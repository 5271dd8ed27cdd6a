package nmauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/nmauth/nmauth"
)

// serve runs h on a request from the client at remote, with an optional
// bearer credential, and returns the recorded answer.
func serve(h http.Handler, remote, bearer string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/app", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	req.RemoteAddr = remote
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })

// TestLimitSharesTheLoginBudget checks that an application route under
// Limit and the login routes draw on one budget per client.
func TestLimitSharesTheLoginBudget(t *testing.T) {
	f := newFixture(t, func(c *nmauth.Config) { c.ClientRate, c.ClientBurst = 1, 2 })
	f.addUser("alice", "correct horse battery")
	// An application route that checks a key of its own, and finds it
	// wrong: a right one would give its attempt back.
	app := f.auth.Limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.auth.WriteError(w, r, nmauth.ErrInvalidCredentials)
	}))
	login := func(remote string) int {
		req := httptest.NewRequest(http.MethodPost, "/api/users/adm/authenticate",
			strings.NewReader(`{"username":"alice","password":"correct horse battery"}`))
		req.Header.Set("Content-Type", "application/json")
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		f.auth.Handler().ServeHTTP(rec, req)
		return rec.Code
	}

	for range 2 {
		if rec := serve(app, "192.0.2.7:1000", ""); rec.Code != http.StatusUnauthorized {
			t.Fatalf("app route within the burst: %d", rec.Code)
		}
	}
	if code := login("192.0.2.7:1001"); code != http.StatusTooManyRequests {
		t.Fatalf("login after the app route spent the burst: %d, want 429", code)
	}
	rec := serve(app, "192.0.2.7:1002", "")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("app route past the limit: %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	if code := login("192.0.2.8:1000"); code != http.StatusOK {
		t.Fatalf("another client: %d, want 200", code)
	}
	f.events.mu.Lock()
	defer f.events.mu.Unlock()
	throttled := 0
	for _, e := range f.events.events {
		if e.Type == nmauth.EventClientThrottled {
			throttled++
			if e.Client != netip.MustParseAddr("192.0.2.7") {
				t.Errorf("throttle event names client %v", e.Client)
			}
		}
	}
	if throttled != 2 {
		t.Errorf("%d throttle events, want 2", throttled)
	}
}

func TestWriteResponse(t *testing.T) {
	for _, tc := range []struct {
		wire nmauth.WireProfile
		want string
	}{
		{nmauth.WireSpec, `{"code":201,"message":"network created","response":{"name":"home"}}`},
		{nmauth.WireNetmaker, `{"Code":201,"Message":"network created","Response":{"name":"home"}}`},
	} {
		f := newFixture(t, withWire(tc.wire))
		rec := httptest.NewRecorder()
		f.auth.WriteResponse(rec, httptest.NewRequest(http.MethodPost, "/api/networks", nil), http.StatusCreated, "network created", map[string]string{"name": "home"})
		if rec.Code != http.StatusCreated || strings.TrimSpace(rec.Body.String()) != tc.want {
			t.Errorf("%s: %d %s, want 201 %s", tc.wire, rec.Code, rec.Body, tc.want)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", tc.wire, ct)
		}
	}
}

func TestWriteError(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		for _, tc := range []struct {
			err    error
			status int
			header string
		}{
			{nmauth.ErrForbidden, http.StatusForbidden, ""},
			{nmauth.ErrUnauthenticated, http.StatusUnauthorized, "WWW-Authenticate"},
			{&nmauth.RetryError{Reason: nmauth.ErrThrottled}, http.StatusTooManyRequests, "Retry-After"},
			{nmauth.ErrStoreUnavailable, http.StatusServiceUnavailable, "Retry-After"},
			{errors.New("db password is hunter2"), http.StatusInternalServerError, ""},
		} {
			rec := httptest.NewRecorder()
			f.auth.WriteError(rec, httptest.NewRequest(http.MethodGet, "/app", nil), tc.err)
			r := reply{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes(), wire: w}
			wantError(t, r, tc.status)
			if tc.header != "" && rec.Header().Get(tc.header) == "" {
				t.Errorf("%v: no %s header", tc.err, tc.header)
			}
			if strings.Contains(rec.Body.String(), "hunter2") {
				t.Errorf("the error's text reached the client: %s", rec.Body)
			}
		}
	})
}

type ctxMark struct{}

// TestEventContext checks that OnEvent gets the context of the request
// that caused an event, naming its client, and the caller's context for a
// method called directly.
func TestEventContext(t *testing.T) {
	type seen struct {
		e    nmauth.Event
		mark any
	}
	var events []seen
	f := newFixture(t, func(c *nmauth.Config) {
		c.OnEvent = func(ctx context.Context, e nmauth.Event) {
			events = append(events, seen{e, ctx.Value(ctxMark{})})
		}
	})
	f.addUser("alice", "correct horse battery")
	events = nil
	marked := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxMark{}, "request-7")))
		})
	}
	req := httptest.NewRequest(http.MethodPost, "/api/users/adm/authenticate",
		strings.NewReader(`{"username":"alice","password":"wrong password!"}`))
	req.Header.Set("Content-Type", "application/json")
	req.RemoteAddr = "198.51.100.4:5555"
	marked(f.auth.Handler()).ServeHTTP(httptest.NewRecorder(), req)

	// The master key through the middleware, from an IPv6 client.
	serve(marked(f.auth.Middleware(okHandler)), "[2001:db8:1:2:3::9]:443", testMasterKey)

	ctx := context.WithValue(t.Context(), ctxMark{}, "admin-1")
	if err := f.auth.Admin().DisableUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}

	want := []struct {
		typ    nmauth.EventType
		client string
		mark   string
	}{
		{nmauth.EventLoginFailed, "198.51.100.4", "request-7"},
		{nmauth.EventMasterKeyUsed, "2001:db8:1:2::", "request-7"},
		{nmauth.EventUserDisabled, "invalid IP", "admin-1"},
		{nmauth.EventTokensRevoked, "invalid IP", "admin-1"},
	}
	if len(events) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(events), len(want), events)
	}
	for i, w := range want {
		got := events[i]
		if got.e.Type != w.typ || got.e.Client.String() != w.client || got.mark != w.mark {
			t.Errorf("event %d: %s client %s context %v, want %s client %s context %s",
				i, got.e.Type, got.e.Client, got.mark, w.typ, w.client, w.mark)
		}
	}
}
