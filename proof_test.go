package nmauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

// errNoProof stands for a second factor of the application's that failed.
var errNoProof = errors.New("the application's second factor failed")

// withSecondFactor marks the users of has as having a second factor of the
// application's.
func withSecondFactor(has map[string]bool) func(*nmauth.Config) {
	return func(c *nmauth.Config) {
		c.SecondFactor = func(_ context.Context, u nmauth.UserInfo) (bool, error) { return has[u.Name], nil }
	}
}

// TestSecondFactorHook logs in a user whom Config.SecondFactor names: the
// right password earns a pre-auth token, verify-totp cannot redeem it (the
// user has no TOTP), and RedeemPreAuth trades it once for a user token that
// passed a second factor. A user it does not name gets a user token.
func TestSecondFactorHook(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		var asked []nmauth.UserInfo
		f := newFixture(t, withWire(w), func(c *nmauth.Config) {
			c.SecondFactor = func(_ context.Context, u nmauth.UserInfo) (bool, error) {
				asked = append(asked, u)
				return u.Name == "alice", nil
			}
		})
		f.addUser("alice", "correct horse battery")
		f.addUser("bob", "correct horse battery")
		ctx := context.Background()
		wantError(t, f.loginUser("alice", "wrong password"), http.StatusUnauthorized)
		if len(asked) != 0 {
			t.Fatalf("the hook was asked about a wrong password: %+v", asked)
		}

		f.userToken("bob", "correct horse battery")
		pre := f.preAuthToken("alice", "correct horse battery")
		wantError(t, f.verifyTOTP("alice", pre, "123456"), http.StatusUnauthorized)

		alice, err := f.auth.Admin().LookupUser(ctx, "alice")
		if err != nil || len(asked) != 2 || asked[1].Name != "alice" || !asked[1].CreatedAt.Equal(alice.CreatedAt) {
			t.Fatalf("the hook was asked about %+v, want bob then alice as LookupUser tells of her (%+v, %v)", asked, alice, err)
		}
		if name, err := f.ext.CheckPreAuth(ctx, pre, "Alice"); err != nil || name != "alice" {
			t.Fatalf("CheckPreAuth = %q, %v; want alice", name, err)
		}
		out, err := f.ext.RedeemPreAuth(ctx, pre, "alice", nil)
		if err != nil || out.UserName != "alice" || out.AuthToken == "" {
			t.Fatalf("RedeemPreAuth = %+v, %v", out, err)
		}
		p, err := f.auth.CheckBearer(ctx, out.AuthToken)
		if err != nil || p.Kind != nmauth.KindUser || p.Name != "alice" || !p.TOTP {
			t.Fatalf("the traded token checks as %+v, %v; want a user token of alice that passed a second factor", p, err)
		}
		if n := f.events.count(nmauth.EventSecondFactorPassed); n != 1 {
			t.Errorf("%d %s events, want 1", n, nmauth.EventSecondFactorPassed)
		}
		if _, err := f.ext.RedeemPreAuth(ctx, pre, "alice", nil); !errors.Is(err, nmauth.ErrUnauthenticated) {
			t.Errorf("a pre-auth token redeemed twice: %v, want ErrUnauthenticated", err)
		}
		if _, err := f.ext.CheckPreAuth(ctx, pre, "alice"); !errors.Is(err, nmauth.ErrUnauthenticated) {
			t.Errorf("CheckPreAuth of a redeemed token: %v, want ErrUnauthenticated", err)
		}
	})
}

// TestSecondFactorHookFailure answers a login 503 when the hook fails, for
// the right password as for no other, and counts no failure: the next
// login with the hook working goes through at once.
func TestSecondFactorHookFailure(t *testing.T) {
	fail := true
	f := newFixture(t, func(c *nmauth.Config) {
		c.SecondFactor = func(context.Context, nmauth.UserInfo) (bool, error) {
			if fail {
				return false, errors.New("passkey store down")
			}
			return false, nil
		}
	})
	f.addUser("alice", "correct horse battery")
	for range 8 {
		r := f.loginUser("alice", "correct horse battery")
		wantError(t, r, http.StatusServiceUnavailable)
		if r.header.Get("Retry-After") == "" {
			t.Fatal("503 without Retry-After")
		}
	}
	wantError(t, f.loginUser("alice", "wrong password"), http.StatusUnauthorized)
	fail = false
	f.userToken("alice", "correct horse battery")
}

// TestRedeemPreAuthFailures counts failed proofs as wrong codes: each is
// returned as the caller gave it, the token dies after five, the user's
// backoff then holds for the next token and for verify-totp alike, and a
// proof that holds after the backoff clears the count.
func TestRedeemPreAuthFailures(t *testing.T) {
	f := newFixture(t)
	f.addUser("alice", "correct horse battery")
	secret, _ := f.enroll("alice", f.userToken("alice", "correct horse battery"))
	ctx := context.Background()

	pre := f.preAuthToken("alice", "correct horse battery")
	for i := range maxTOTPFailures {
		if _, err := f.ext.RedeemPreAuth(ctx, pre, "alice", errNoProof); !errors.Is(err, errNoProof) {
			t.Fatalf("failed proof %d: %v, want the caller's error", i+1, err)
		}
	}
	if _, err := f.ext.RedeemPreAuth(ctx, pre, "alice", nil); !errors.Is(err, nmauth.ErrUnauthenticated) {
		t.Fatalf("a token after %d failed proofs: %v, want ErrUnauthenticated", maxTOTPFailures, err)
	}
	if n := f.events.count(nmauth.EventSecondFactorFailed); n != maxTOTPFailures {
		t.Errorf("%d %s events, want %d", n, nmauth.EventSecondFactorFailed, maxTOTPFailures)
	}

	// Five failures in a row start the backoff: 1 s, for every factor.
	pre = f.preAuthToken("alice", "correct horse battery")
	var throttled *nmauth.RetryError
	if _, err := f.ext.CheckPreAuth(ctx, pre, "alice"); !errors.As(err, &throttled) || !errors.Is(err, nmauth.ErrThrottled) {
		t.Fatalf("CheckPreAuth in the backoff: %v, want a RetryError for ErrThrottled", err)
	}
	if _, err := f.ext.RedeemPreAuth(ctx, pre, "alice", nil); !errors.As(err, &throttled) {
		t.Fatalf("a proof in the backoff: %v, want a ThrottledError", err)
	}
	if n := f.events.count(nmauth.EventSecondFactorThrottled); n != 1 {
		t.Errorf("%d %s events, want 1", n, nmauth.EventSecondFactorThrottled)
	}
	wantError(t, f.verifyTOTP("alice", pre, f.code(secret, 0)), http.StatusTooManyRequests)

	f.clock.Advance(time.Second)
	if _, err := f.ext.RedeemPreAuth(ctx, pre, "alice", nil); err != nil {
		t.Fatalf("a proof after the backoff: %v", err)
	}
	u, err := f.store.GetUser(ctx, "alice")
	if err != nil || nmauth.StateOf(&u.State).TOTPFailures != 0 || !nmauth.StateOf(&u.State).TOTPBlockedUntil.IsZero() || nmauth.StateOf(&u.State).PreAuthID != "" {
		t.Errorf("after a proof that held: failures %d, blocked until %v, pre-auth id %q (%v); want all cleared",
			nmauth.StateOf(&u.State).TOTPFailures, nmauth.StateOf(&u.State).TOTPBlockedUntil, nmauth.StateOf(&u.State).PreAuthID, err)
	}
}

// TestCheckPreAuthRefusals checks that CheckPreAuth refuses what the
// redemption would, and changes nothing.
func TestCheckPreAuthRefusals(t *testing.T) {
	store := &watchedStore{Store: nmauth.NewMemoryStore()}
	f := newFixture(t, withSecondFactor(map[string]bool{"alice": true, "bob": true}), func(c *nmauth.Config) { c.Store = store })
	f.addUser("alice", "correct horse battery")
	f.addUser("bob", "correct horse battery")
	ctx := context.Background()
	old := f.preAuthToken("alice", "correct horse battery")
	pre := f.preAuthToken("alice", "correct horse battery")
	bobs := f.preAuthToken("bob", "correct horse battery")
	hostToken := func() string {
		f.addHost(testHostIDs[0], "", "correct horse battery")
		h, err := f.auth.LoginHost(ctx, testHostIDs[0], "", "correct horse battery")
		if err != nil {
			t.Fatal(err)
		}
		return h.AuthToken
	}()
	before := store.snapshot(t)
	for _, c := range []struct {
		name, token, user string
		want              error
	}{
		{"an earlier token, replaced by a later login", old, "alice", nmauth.ErrUnauthenticated},
		{"another user's token", bobs, "alice", nmauth.ErrForbidden},
		{"a host token", hostToken, "alice", nmauth.ErrUnauthenticated},
		{"a forged token", pre[:len(pre)-4] + "AAAA", "alice", nmauth.ErrUnauthenticated},
		{"a malformed username", pre, "\x00", nmauth.ErrForbidden},
	} {
		if _, err := f.ext.CheckPreAuth(ctx, c.token, c.user); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if diff := diffState(before, store.snapshot(t)); diff != "" {
		t.Errorf("CheckPreAuth changed the store:%s", diff)
	}
	if err := f.auth.Admin().DisableUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ext.CheckPreAuth(ctx, pre, "alice"); !errors.Is(err, nmauth.ErrUnauthenticated) {
		t.Errorf("the token of a disabled user: %v, want ErrUnauthenticated", err)
	}
	if _, err := f.ext.RedeemPreAuth(ctx, pre, "alice", nil); !errors.Is(err, nmauth.ErrUnauthenticated) {
		t.Errorf("redeeming the token of a disabled user: %v, want ErrUnauthenticated", err)
	}
}

// TestExtensionLogins mints tokens for a user a registered extension
// proved: by a first factor (Login, which gives alice, without TOTP, a
// user token) or by one that is also a second factor (LoginVerified),
// refused for an unknown or disabled user as a wrong password is, and
// revoked with the user's other tokens.
func TestExtensionLogins(t *testing.T) {
	f := newFixture(t)
	f.addUser("alice", "correct horse battery")
	f.addUser("bob", "correct horse battery")
	ctx := context.Background()
	for _, second := range []bool{false, true} {
		login := f.ext.Login
		if second {
			login = f.ext.LoginVerified
		}
		out, err := login(ctx, "Alice")
		if err != nil || out.UserName != "alice" || out.AuthToken == "" {
			t.Fatalf("login (second factor %v) = %+v, %v", second, out, err)
		}
		p, err := f.auth.CheckBearer(ctx, out.AuthToken)
		if err != nil || p.Kind != nmauth.KindUser || p.Name != "alice" || p.TOTP != second {
			t.Fatalf("login (second factor %v) token checks as %+v, %v", second, p, err)
		}
	}
	if n := f.events.count(nmauth.EventLoginSucceeded); n != 2 {
		t.Errorf("%d %s events, want 2", n, nmauth.EventLoginSucceeded)
	}
	tok, _ := f.ext.LoginVerified(ctx, "alice")
	if err := f.auth.Admin().RevokeUserTokens(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.auth.CheckBearer(ctx, tok.AuthToken); !errors.Is(err, nmauth.ErrUnauthenticated) {
		t.Errorf("a vouched token after revocation: %v, want ErrUnauthenticated", err)
	}
	if err := f.auth.Admin().DisableUser(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"bob", "nobody"} {
		if _, err := f.ext.LoginVerified(ctx, name); !errors.Is(err, nmauth.ErrInvalidCredentials) {
			t.Errorf("LoginVerified(%q): %v, want ErrInvalidCredentials", name, err)
		}
	}
	if n := f.events.count(nmauth.EventLoginFailed); n != 2 {
		t.Errorf("%d %s events, want 2", n, nmauth.EventLoginFailed)
	}
}

func TestLookupUser(t *testing.T) {
	f := newFixture(t)
	f.addUser("alice", "correct horse battery")
	f.enroll("alice", f.userToken("alice", "correct horse battery"))
	ctx := context.Background()
	info, err := f.auth.Admin().LookupUser(ctx, "ALICE")
	if err != nil {
		t.Fatal(err)
	}
	listed, err := f.auth.Admin().ListUsers(ctx, "", 1)
	if err != nil || len(listed) != 1 {
		t.Fatalf("ListUsers = %v, %v", listed, err)
	}
	if !reflect.DeepEqual(info, listed[0]) || !info.TOTPEnabled || info.RecoveryCodesLeft != 10 {
		t.Errorf("LookupUser = %+v, ListUsers = %+v; want the same, with TOTP on and 10 recovery codes", info, listed[0])
	}
	if _, err := f.auth.Admin().LookupUser(ctx, "nobody"); !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("LookupUser of an unknown user: %v, want ErrNotFound", err)
	}
}

// TestWriteUserLogin checks the bytes of a login answered on a route of the
// application's: those of the handler's own user login, in each profile.
func TestWriteUserLogin(t *testing.T) {
	want := map[nmauth.WireProfile]string{
		nmauth.WireSpec:     `{"code":200,"message":"user authenticated","response":{"userName":"alice","authToken":"tok"}}` + "\n",
		nmauth.WireNetmaker: `{"Code":200,"Message":"user authenticated","Response":{"UserName":"alice","AuthToken":"tok"}}` + "\n",
	}
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		rec := httptest.NewRecorder()
		f.ext.WriteUserLogin(rec, nmauth.UserLogin{UserName: "alice", AuthToken: "tok"})
		if rec.Code != http.StatusOK || rec.Body.String() != want[w] || rec.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("WriteUserLogin wrote %d %q (Cache-Control %q), want 200 %q", rec.Code, rec.Body, rec.Header().Get("Cache-Control"), want[w])
		}
	})
}

// TestDecodeJSON reads bodies as the handler's own routes do, and its
// errors answer as theirs.
func TestDecodeJSON(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		name, contentType, body string
		status                  int
	}{
		{"a body", "application/json", `{"name":"laptop"}`, http.StatusOK},
		{"another content type", "text/plain", `{"name":"laptop"}`, http.StatusUnsupportedMediaType},
		{"two values", "application/json", `{"name":"a"} {}`, http.StatusBadRequest},
		{"a key twice", "application/json", `{"name":"a","Name":"b"}`, http.StatusBadRequest},
		{"too large", "application/json", `{"name":"` + strings.Repeat("a", (64<<10)) + `"}`, http.StatusRequestEntityTooLarge},
	} {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(c.body))
		req.Header.Set("Content-Type", c.contentType)
		rec := httptest.NewRecorder()
		var v struct {
			Name string `json:"name"`
		}
		if err := f.ext.DecodeJSON(rec, req, &v); err != nil {
			f.auth.WriteError(rec, req, err)
		} else if v.Name != "laptop" {
			t.Errorf("%s: read %q, want laptop", c.name, v.Name)
		}
		if rec.Code != c.status {
			t.Errorf("%s: status %d, want %d", c.name, rec.Code, c.status)
		}
	}
}

// TestEmit passes an application's event to OnEvent with the time and the
// client the context names.
func TestEmit(t *testing.T) {
	f := newFixture(t)
	client := netip.MustParseAddr("192.0.2.7")
	f.ext.Emit(nmauth.WithClientAddr(context.Background(), client), nmauth.Event{Type: "passkey.added", Kind: nmauth.KindUser, Name: "alice"})
	f.events.mu.Lock()
	defer f.events.mu.Unlock()
	if len(f.events.events) != 1 {
		t.Fatalf("%d events, want 1", len(f.events.events))
	}
	e := f.events.events[0]
	if e.Type != "passkey.added" || e.Name != "alice" || e.Client != client || e.Time.IsZero() {
		t.Errorf("event %+v, want passkey.added of alice from %v with a time", e, client)
	}
}

// maxTOTPFailures is the documented number of wrong codes a pre-auth token
// survives.
const maxTOTPFailures = 5
