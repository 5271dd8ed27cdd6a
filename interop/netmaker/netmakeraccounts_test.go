package netmaker

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	jwt "github.com/golang-jwt/jwt/v4"
	"github.com/gravitl/netmaker/models"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

// Changes an operator makes to accounts in Netmaker, through its API, for
// the tests of what nmauthd sees of them.

// DisableUser disables a user, with the master key.
func (nm *netmakerServer) DisableUser(name string) {
	nm.t.Helper()
	st, b := nm.call(http.MethodPost, "/api/users/"+url.PathEscape(name)+"/disable", nm.MasterKey, nil, nil)
	nm.must("disabling "+name, st, b)
}

// EnableUser enables a disabled user, with the master key.
func (nm *netmakerServer) EnableUser(name string) {
	nm.t.Helper()
	st, b := nm.call(http.MethodPost, "/api/users/"+url.PathEscape(name)+"/enable", nm.MasterKey, nil, nil)
	nm.must("enabling "+name, st, b)
}

// DeleteUser deletes a user with a token of the super admin (Netmaker
// looks the caller up as a user, so the master key will not do).
func (nm *netmakerServer) DeleteUser(adminToken, name string) {
	nm.t.Helper()
	st, b := nm.call(http.MethodDelete, "/api/users/"+url.PathEscape(name), adminToken, nil, nil)
	nm.must("deleting "+name, st, b)
}

// SetPassword gives a user a new password, with the master key, as the
// dashboard's user page does: the user as Netmaker lists it, with the
// password set (Netmaker sets the other fields from the body too).
func (nm *netmakerServer) SetPassword(name, password string) {
	nm.t.Helper()
	var users []models.ReturnUser
	st, b := nm.call(http.MethodGet, "/api/users", nm.MasterKey, nil, &users)
	nm.must("listing users", st, b)
	i := slices.IndexFunc(users, func(u models.ReturnUser) bool { return u.UserName == name })
	if i < 0 {
		nm.t.Fatalf("Netmaker lists no user %s", name)
	}
	u := users[i]
	st, b = nm.call(http.MethodPut, "/api/users/"+url.PathEscape(name), nm.MasterKey, models.User{
		UserName:        u.UserName,
		Password:        password,
		IsMFAEnabled:    u.IsMFAEnabled,
		DisplayName:     u.DisplayName,
		AccountDisabled: u.AccountDisabled,
		AuthType:        u.AuthType,
		UserGroups:      u.UserGroups,
		PlatformRoleID:  u.PlatformRoleID,
		NetworkRoles:    u.NetworkRoles,
	}, nil)
	nm.must("setting the password of "+name, st, b)
}

// EnableTOTP turns TOTP on for a user at Netmaker, as its dashboard does
// (init-totp, then complete-totp with a code of the secret, with the
// user's token), and returns the secret Netmaker keeps.
func (nm *netmakerServer) EnableTOTP(userToken, name string) string {
	nm.t.Helper()
	var r models.SuccessResponse
	st, b := nm.call(http.MethodPost, "/api/users/"+url.PathEscape(name)+"/auth/init-totp", userToken, nil, &r)
	nm.must("init-totp for "+name, st, b)
	raw, _ := json.Marshal(r.Response)
	var init models.TOTPInitiateResponse
	if err := json.Unmarshal(raw, &init); err != nil || init.OTPAuthURL == "" {
		nm.t.Fatalf("init-totp for %s answered %s", name, b)
	}
	key, err := otp.NewKeyFromURL(init.OTPAuthURL)
	if err != nil {
		nm.t.Fatal(err)
	}
	code, err := totp.GenerateCode(key.Secret(), time.Now())
	if err != nil {
		nm.t.Fatal(err)
	}
	st, b = nm.call(http.MethodPost, "/api/users/"+url.PathEscape(name)+"/auth/complete-totp", userToken,
		models.UserTOTPVerificationParams{OTPAuthURL: init.OTPAuthURL, OTPAuthURLSignature: init.OTPAuthURLSignature, TOTP: code}, nil)
	nm.must("complete-totp for "+name, st, b)
	return key.Secret()
}

// LoginStatus tries a user's password at Netmaker itself and returns the
// status and Netmaker's answer.
func (nm *netmakerServer) LoginStatus(name, password string) (int, models.SuccessResponse) {
	nm.t.Helper()
	var r models.SuccessResponse
	st, _ := nm.call(http.MethodPost, "/api/users/adm/authenticate", "", models.UserAuthParams{UserName: name, Password: password}, &r)
	return st, r
}

// TestNetmakerServerAccountChanges proves the helpers that change
// Netmaker's accounts, by Netmaker's own logins: a disabled user is
// refused and logs in again once enabled, a new password replaces the old
// one, a user with TOTP on gets a pre-auth token instead of a token and
// logs in with a code of the secret, and a deleted user is refused.
func TestNetmakerServerAccountChanges(t *testing.T) {
	nm := startNetmaker(t, "sqlite")
	a := seedNetmaker(nm)

	nm.DisableUser(a.User)
	if st, _ := nm.LoginStatus(a.User, a.UserPassword); st == http.StatusOK {
		t.Error("Netmaker logged a disabled user in")
	}
	nm.EnableUser(a.User)
	nm.Login(a.User, a.UserPassword)

	nm.SetPassword(a.User, "bob-password-2")
	if st, _ := nm.LoginStatus(a.User, a.UserPassword); st == http.StatusOK {
		t.Error("Netmaker still takes the old password")
	}
	tok := nm.Login(a.User, "bob-password-2")

	secret := nm.EnableTOTP(tok, a.User)
	st, r := nm.LoginStatus(a.User, "bob-password-2")
	m, _ := r.Response.(map[string]any)
	pre, _ := m["pre_auth_token"].(string)
	if st != http.StatusOK || pre == "" || m["AuthToken"] != nil {
		t.Fatalf("login with TOTP on: %d %#v, want a pre-auth token only", st, r.Response)
	}
	// A code of the step after the one complete-totp used, so that a
	// replay check (which Netmaker does not have) could not refuse it.
	code, err := totp.GenerateCode(secret, time.Now().Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var v models.SuccessResponse
	if st, b := nm.call(http.MethodPost, "/api/users/"+a.User+"/auth/verify-totp", pre, models.UserTOTPVerificationParams{TOTP: code}, &v); st != http.StatusOK {
		t.Fatalf("verify-totp at Netmaker: %d %s", st, b)
	}
	if authToken(t, v) == "" {
		t.Fatal("verify-totp answered no token")
	}

	nm.DeleteUser(a.AdminToken, a.User)
	if st, _ := nm.LoginStatus(a.User, "bob-password-2"); st == http.StatusOK {
		t.Error("Netmaker logged a deleted user in")
	}
}

// SetUserTokenTTLs sets Netmaker's two lifetimes of user tokens, in
// minutes, through its settings route as its dashboard does, with an
// admin's token, keeping every other setting: jwt_validity_duration for
// a login that names another client in X-Application-Name (the web UI),
// jwt_validity_duration_clients for netclient, netmaker-desktop and a
// login that names none.
func (nm *netmakerServer) SetUserTokenTTLs(adminToken string, ui, clients int) {
	nm.t.Helper()
	var r models.SuccessResponse
	st, b := nm.call(http.MethodGet, "/api/server/settings", adminToken, nil, &r)
	nm.must("reading the server settings", st, b)
	s := into[models.ServerSettings](nm.t, r)
	s.JwtValidityDuration, s.JwtValidityDurationClients = ui, clients
	st, b = nm.call(http.MethodPut, "/api/server/settings", adminToken, s, nil)
	nm.must("setting the lifetimes of user tokens", st, b)
}

// loginAs logs a user in at target (Netmaker, or Caddy in front of it)
// over client, with X-Application-Name app ("" sends none), and returns
// the user token.
func loginAs(t *testing.T, client *http.Client, target, app, name, password string) string {
	t.Helper()
	body, _ := json.Marshal(models.UserAuthParams{UserName: name, Password: password})
	req, err := http.NewRequest(http.MethodPost, target+"/api/users/adm/authenticate", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if app != "" {
		req.Header.Set("X-Application-Name", app)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r models.SuccessResponse
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &r) != nil {
		t.Fatalf("%s's login at %s as %q: %d %s", name, target, app, resp.StatusCode, b)
	}
	return authToken(t, r)
}

// tokenLifetime is how long a user token says it lives, from its iat to
// its exp, read as Netmaker's models.UserClaims. The signature is not
// checked here: Netmaker's routes check it.
func tokenLifetime(t *testing.T, token string) time.Duration {
	t.Helper()
	var c models.UserClaims
	if _, _, err := jwt.NewParser().ParseUnverified(token, &c); err != nil || c.ExpiresAt == nil || c.IssuedAt == nil {
		t.Fatalf("a user token without exp and iat: %v", err)
	}
	return c.ExpiresAt.Sub(c.IssuedAt.Time)
}
