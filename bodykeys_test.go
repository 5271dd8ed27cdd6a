package nmauth_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nmauth/nmauth"
)

// bodyServer serves the handler over loopback with one user and one host.
type bodyServer struct {
	auth *nmauth.Authenticator
	url  string
}

const (
	bodyHostID       = "0b7e4c2d-1f3a-4b5c-8d6e-7f8091a2b3c4"
	bodyHostPassword = "host password of some length"
	bodyUserPassword = "correct horse battery"
)

func newBodyServer(t *testing.T) *bodyServer {
	t.Helper()
	secret := make([]byte, 32)
	rand.Read(secret)
	auth, err := nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{secret}, ClientRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := auth.Admin().CreateUser(context.Background(), "alice", bodyUserPassword); err != nil {
		t.Fatal(err)
	}
	if err := auth.Admin().CreateHost(context.Background(), bodyHostID, "", bodyHostPassword); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(auth.Handler())
	t.Cleanup(srv.Close)
	return &bodyServer{auth: auth, url: srv.URL}
}

// post sends body as JSON and returns the status and the message.
func (s *bodyServer) post(t *testing.T, path, bearer, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct{ Message string }
	json.NewDecoder(resp.Body).Decode(&env)
	return resp.StatusCode, env.Message
}

// TestBodyKeysMatchExactly checks that a key that is a field's name in
// another case, or that looks like a field misspelled, is a 400 naming the
// field, as a key given twice is, and that a missing or empty login field
// is a 400 saying it is required: none of them is a wrong credential.
func TestBodyKeysMatchExactly(t *testing.T) {
	s := newBodyServer(t)
	user, host, pw := "/api/users/adm/authenticate", "/api/hosts/adm/authenticate", `"`+bodyUserPassword+`"`
	login, err := s.auth.LoginUser(context.Background(), "alice", bodyUserPassword)
	if err != nil {
		t.Fatal(err)
	}
	complete, verify := "/api/users/alice/auth/complete-totp", "/api/users/alice/auth/verify-totp"
	for _, tc := range []struct {
		name, path, bearer, body string
		says                     []string
	}{
		{"USERNAME", user, "", `{"USERNAME":"alice","password":` + pw + `}`, []string{`"USERNAME"`, `must be written "username"`}},
		{"Password", user, "", `{"username":"alice","Password":` + pw + `}`, []string{`"Password"`, `"password"`}},
		{"long s folds to s", user, "", `{"uſername":"alice","password":` + pw + `}`, []string{`must be written "username"`}},
		{"pass", user, "", `{"username":"alice","pass":` + pw + `}`, []string{`unknown field "pass"`, `did you mean "password"`}},
		{"passwd", user, "", `{"username":"alice","passwd":` + pw + `}`, []string{`did you mean "password"`}},
		{"pasword", user, "", `{"username":"alice","pasword":` + pw + `}`, []string{`did you mean "password"`}},
		{"passwrod", user, "", `{"username":"alice","passwrod":` + pw + `}`, []string{`did you mean "password"`}},
		{"user_name", user, "", `{"user_name":"alice","password":` + pw + `}`, []string{`unknown field "user_name"`, `did you mean "username"`}},
		{"userName", user, "", `{"userName":"alice","password":` + pw + `}`, []string{`must be written "username"`}},
		{"usename", user, "", `{"usename":"alice","password":` + pw + `}`, []string{`did you mean "username"`}},
		{"user", user, "", `{"user":"alice","password":` + pw + `}`, []string{`did you mean "username"`}},
		{"ID", host, "", `{"ID":"` + bodyHostID + `","password":"` + bodyHostPassword + `"}`, []string{`must be written "id"`}},
		{"mac_address", host, "", `{"id":"` + bodyHostID + `","mac_address":"aa:bb:cc:dd:ee:ff","password":"` + bodyHostPassword + `"}`, []string{`did you mean "macaddress"`}},
		{"otpAuthUrl", complete, login.AuthToken, `{"otpAuthUrl":"x","otp_auth_url_signature":"y","totp":"123456"}`, []string{`did you mean "otp_auth_url"`}},
		{"otp_auth_url_sig", complete, login.AuthToken, `{"otp_auth_url":"x","otp_auth_url_sig":"y","totp":"123456"}`, []string{`did you mean "otp_auth_url_signature"`}},
		{"otp for totp", verify, "x", `{"otp":"123456"}`, []string{`did you mean "totp"`}},
		{"TOTP", verify, "x", `{"TOTP":"123456"}`, []string{`must be written "totp"`}},
		{"password twice", user, "", `{"username":"alice","password":"decoy","password":` + pw + `}`, []string{"given twice"}},
		{"no password", user, "", `{"username":"alice"}`, []string{`"password" is missing or empty`, "required"}},
		{"empty password", user, "", `{"username":"alice","password":""}`, []string{`"password" is missing or empty`}},
		{"null username", user, "", `{"username":null,"password":` + pw + `}`, []string{`"username" is missing or empty`}},
		{"a password under another name", user, "", `{"username":"alice","pwd":` + pw + `}`, []string{`"password" is missing or empty`}},
		{"no host password", host, "", `{"id":"` + bodyHostID + `"}`, []string{`"password" is missing or empty`}},
		{"empty host id", host, "", `{"id":"","password":"` + bodyHostPassword + `"}`, []string{`"id" is missing or empty`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, msg := s.post(t, tc.path, tc.bearer, tc.body)
			if status != http.StatusBadRequest {
				t.Fatalf("status %d (%q), want 400", status, msg)
			}
			for _, want := range tc.says {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not say %s", msg, want)
				}
			}
		})
	}

	// None of those counted as an attempt: the right password logs in
	// with no backoff, after more than the free failures.
	if status, msg := s.post(t, user, "", `{"username":"alice","password":`+pw+`}`); status != http.StatusOK {
		t.Errorf("login after the refused bodies: %d %q, want 200", status, msg)
	}
}

// TestBodyKeysOfNetmakerClients checks that the bodies Netmaker v1.4.0's
// clients send still work: netclient's host login (models.AuthParams),
// nmctl's and the web UI's user login (models.UserAuthParams), a whole
// models.User as Netmaker's own API tests post it, and the TOTP bodies
// (models.UserTOTPVerificationParams, all three keys at verify-totp too).
// Unknown keys far from every field are ignored.
func TestBodyKeysOfNetmakerClients(t *testing.T) {
	s := newBodyServer(t)
	pw, hostPW := `"`+bodyUserPassword+`"`, `"`+bodyHostPassword+`"`
	for _, tc := range []struct{ name, path, body string }{
		{"models.AuthParams", "/api/hosts/adm/authenticate", `{"macaddress":"","id":"` + bodyHostID + `","password":` + hostPW + `}`},
		{"models.UserAuthParams", "/api/users/adm/authenticate", `{"username":"alice","password":` + pw + `}`},
		// The keys of models.User in Netmaker v1.4.0.
		{"models.User", "/api/users/adm/authenticate", `{"username":"alice","external_identity_provider_id":"","is_mfa_enabled":false,` +
			`"totp_secret":"","display_name":"","account_disabled":false,"password":` + pw + `,"isadmin":false,"issuperadmin":false,` +
			`"remote_gw_ids":null,"auth_type":"","user_group_ids":null,"platform_role_id":"","network_roles":null,"last_login_time":"0001-01-01T00:00:00Z"}`},
		{"unknown keys far from every field", "/api/users/adm/authenticate", `{"username":"alice","password":` + pw + `,"client":"x","Client":"y","remember":true,"name":"n","ip":"192.0.2.1"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if status, msg := s.post(t, tc.path, "", tc.body); status != http.StatusOK {
				t.Errorf("status %d (%q), want 200", status, msg)
			}
		})
	}
	t.Run("models.UserTOTPVerificationParams", func(t *testing.T) {
		login, err := s.auth.LoginUser(context.Background(), "alice", bodyUserPassword)
		if err != nil {
			t.Fatal(err)
		}
		body := `{"otp_auth_url":"","otp_auth_url_signature":"","totp":"123456"}`
		// The enrollment is not a real one: the refusal is about it, not
		// about a key.
		if status, msg := s.post(t, "/api/users/alice/auth/complete-totp", login.AuthToken, body); status != http.StatusBadRequest || msg != "invalid or expired enrollment" {
			t.Errorf("complete-totp: %d %q, want 400 invalid or expired enrollment", status, msg)
		}
		// No pre-auth token: the refusal is about the bearer.
		if status, msg := s.post(t, "/api/users/alice/auth/verify-totp", "not-a-token", body); status != http.StatusUnauthorized {
			t.Errorf("verify-totp: %d %q, want 401 for the bearer", status, msg)
		}
	})
}
