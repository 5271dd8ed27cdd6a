package tests_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzFinish sends any bytes to the routes that finish a ceremony, as the
// body of a registration, a second factor and a passwordless login: each
// must be refused with a 4xx, never logged in, never a 5xx or a panic.
func FuzzFinish(f *testing.F) {
	h := newHarness(f, options{passwordless: true})
	h.addUser("alice")
	k := newSoftKey(f)
	tok := h.register("alice", h.userToken("alice"), "laptop", k)["authToken"].(string)
	pre, _ := h.passwordLogin("alice")
	// Right answers as seeds, each to a challenge spent before the fuzzing
	// starts, so that none can log in again: the passwordless one by its
	// login, the registration by its passkey, the second factor's by a
	// forged answer to the same challenge, which leaves the pre-auth token
	// standing.
	login := k.get(f, assertion(h.beginPasswordless(), k))
	wantStatus(f, h.finishPasswordless(login), http.StatusOK)
	c, _ := h.beginRegistration("alice", tok, "phone")
	reg := newSoftKey(f).create(f, c)
	wantStatus(f, h.post("/api/users/alice/passkeys/register/finish", tok, reg), http.StatusOK)
	second := assertion(h.beginSecondFactor("alice", pre), k)
	forged := second
	forged.forge = true
	wantError(f, h.finishSecondFactor("alice", pre, k.get(f, forged)), http.StatusUnauthorized)
	for _, seed := range [][]byte{login, reg, k.get(f, second), []byte(`{"id":"AA","rawId":"AA","type":"public-key","response":{}}`)} {
		f.Add(seed)
	}
	handler := h.pk.Handler()
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, route := range []struct{ path, bearer string }{
			{"/api/users/alice/passkeys/register/finish", tok},
			{"/api/users/alice/auth/passkey/finish", pre},
			{"/api/users/adm/passkey/finish", ""},
		} {
			req := httptest.NewRequest(http.MethodPost, route.path, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if route.bearer != "" {
				req.Header.Set("Authorization", "Bearer "+route.bearer)
			}
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, req)
			if rec.Code < 400 || rec.Code >= 500 {
				t.Fatalf("%s answered %d to %q: %s", route.path, rec.Code, body, rec.Body)
			}
		}
	})
}
