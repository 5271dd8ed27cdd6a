package nmauth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

const tokensPath = "/api/v1/users/access_token"

// accessTokenPrefix begins every access token, as AccessToken documents.
const accessTokenPrefix = "nmauth_at_"

// createToken makes an access token over HTTP and returns it.
func (f *fixture) createToken(bearer string, body map[string]any) string {
	f.t.Helper()
	r := f.request(http.MethodPost, tokensPath, bearer, body)
	wantStatus(f.t, r, http.StatusOK)
	tok, _ := r.field(f.t, "authToken").(string)
	if !strings.HasPrefix(tok, accessTokenPrefix) {
		f.t.Fatalf("no access token in %s", r.body)
	}
	return tok
}

// listTokens lists a user's tokens over HTTP and returns the list.
func (f *fixture) listTokens(bearer, user string) []map[string]any {
	f.t.Helper()
	r := f.request(http.MethodGet, tokensPath+"?username="+url.QueryEscape(user), bearer, nil)
	wantStatus(f.t, r, http.StatusOK)
	var list []map[string]any
	raw, _ := json.Marshal(r.json(f.t)[r.key("response")])
	if err := json.Unmarshal(raw, &list); err != nil || list == nil {
		f.t.Fatalf("no list in %s", r.body)
	}
	return list
}

// storedTokens is how many access tokens the store holds for user.
func (f *fixture) storedTokens(user string) int {
	f.t.Helper()
	ts, err := f.store.(nmauth.AccessTokenStore).ListAccessTokens(context.Background(), user)
	if err != nil {
		f.t.Fatal(err)
	}
	return len(ts)
}

func TestAccessTokenLifecycle(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		f.addUser("alice", "correct horse battery")
		session := f.userToken("alice", "correct horse battery")

		tok := f.createToken(session, map[string]any{"name": "ci", "user_name": "alice"})
		p, err := f.auth.CheckBearer(context.Background(), tok)
		if err != nil || p.Kind != nmauth.KindAccessToken || p.Name != "alice" || p.TokenID == "" || p.ReadOnly {
			t.Fatalf("CheckBearer(access token) = %+v, %v", p, err)
		}
		// The token lists itself, without its secret.
		r := f.request(http.MethodGet, tokensPath+"?username=alice", tok, nil)
		wantStatus(t, r, http.StatusOK)
		secret := tok[strings.LastIndexByte(tok[:strings.LastIndexByte(tok, '_')], '_')+1:]
		if bytes.Contains(r.body, []byte(secret)) || bytes.Contains(r.body, []byte(tok)) {
			t.Fatalf("the list shows the token's secret: %s", r.body)
		}
		list := f.listTokens(session, "alice")
		if len(list) != 1 || list[0]["id"] != p.TokenID || list[0]["name"] != "ci" {
			t.Fatalf("list = %v, want the one token %s", list, p.TokenID)
		}
		// The token revokes itself; the next call with it is 401.
		r = f.request(http.MethodDelete, tokensPath+"?id="+p.TokenID, tok, nil)
		wantStatus(t, r, http.StatusOK)
		wantError(t, f.request(http.MethodGet, tokensPath+"?username=alice", tok, nil), http.StatusUnauthorized)
		if n := f.storedTokens("alice"); n != 0 {
			t.Fatalf("store holds %d tokens after the delete", n)
		}
	})
}

// TestAccessTokenStoredAsDigest reads the store: nothing in it is the
// token or its secret.
func TestAccessTokenStoredAsDigest(t *testing.T) {
	f := newFixture(t)
	f.addUser("alice", "correct horse battery")
	tok := f.createToken(testMasterKey, map[string]any{"name": "ci", "user_name": "alice"})
	parts := strings.Split(strings.TrimPrefix(tok, accessTokenPrefix), "_")
	ts, err := f.store.(nmauth.AccessTokenStore).ListAccessTokens(context.Background(), "alice")
	if err != nil || len(ts) != 1 {
		t.Fatalf("stored tokens %v, %v", ts, err)
	}
	rec, _ := json.Marshal(ts[0])
	if ts[0].ID != parts[0] || bytes.Contains(rec, []byte(parts[1])) || bytes.Contains(rec, []byte(parts[2])) {
		t.Fatalf("stored record %s holds the secret or its check (token %s)", rec, tok)
	}
	if !strings.HasPrefix(ts[0].Digest, "$nmauth-hmac-sha256$") || ts[0].CreatedBy != "" {
		t.Fatalf("stored record %s: want a keyed digest, made by the master key", rec)
	}
}

// TestAccessTokenHostile sends every wrong token and every request a
// token's holder may not make: each gets its 4xx and the store keeps the
// tokens it had.
func TestAccessTokenHostile(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		f.addUser("alice", "correct horse battery")
		f.addUser("bob", "battery staple horse")
		alice := f.userToken("alice", "correct horse battery")
		bob := f.userToken("bob", "battery staple horse")
		tok := f.createToken(alice, map[string]any{"name": "full", "user_name": "alice"})
		ro := f.createToken(alice, map[string]any{"name": "ro", "user_name": "alice", "read_only": true})
		expiring := f.createToken(alice, map[string]any{"name": "short", "user_name": "alice",
			"expires_at": f.clock.Now().Add(2 * time.Minute).Format(time.RFC3339)})
		bobs := f.createToken(bob, map[string]any{"name": "b", "user_name": "bob"})
		roID := mustCheck(t, f, ro).TokenID
		mustCheck(t, f, expiring)

		flip := []byte(tok)
		flip[len(flip)-30] ^= 'A' ^ 'B' // a secret character
		guessed := accessTokenPrefix + strings.Repeat("A", 16) + "_" + strings.Repeat("B", 26) + "_" + strings.Repeat("C", 26)
		f.clock.Advance(3 * time.Minute) // expiring is now expired
		for name, cred := range map[string]string{
			"guessed":      guessed,
			"truncated":    tok[:len(tok)-1],
			"wrong prefix": "nmauth_xx_" + strings.TrimPrefix(tok, accessTokenPrefix),
			"lower case":   strings.ToLower(tok),
			"changed":      string(flip),
			"expired":      expiring,
		} {
			wantError(t, f.request(http.MethodGet, tokensPath+"?username=alice", cred, nil), http.StatusUnauthorized)
			if _, err := f.auth.CheckBearer(context.Background(), cred); err == nil {
				t.Errorf("%s token accepted", name)
			}
		}
		for name, c := range map[string]struct {
			method, path, bearer string
			body                 any
			status               int
		}{
			"another user's list":              {http.MethodGet, tokensPath + "?username=bob", tok, nil, http.StatusForbidden},
			"a token for another user":         {http.MethodPost, tokensPath, alice, map[string]any{"name": "x", "user_name": "bob"}, http.StatusForbidden},
			"a token made by a token":          {http.MethodPost, tokensPath, tok, map[string]any{"name": "x", "user_name": "alice"}, http.StatusForbidden},
			"a read-only token widening":       {http.MethodPost, tokensPath, ro, map[string]any{"name": "x", "user_name": "alice"}, http.StatusForbidden},
			"a read-only token deleting":       {http.MethodDelete, tokensPath + "?id=" + roID, ro, nil, http.StatusForbidden},
			"deleting another user's token":    {http.MethodDelete, tokensPath + "?id=" + mustCheck(t, f, bobs).TokenID, alice, nil, http.StatusForbidden},
			"an unknown id":                    {http.MethodDelete, tokensPath + "?id=AAAAAAAAAAAAAAAA", alice, nil, http.StatusNotFound},
			"an expiry past the maximum":       {http.MethodPost, tokensPath, alice, map[string]any{"name": "x", "user_name": "alice", "expires_at": f.clock.Now().AddDate(2, 0, 0).Format(time.RFC3339)}, http.StatusBadRequest},
			"an expiry in the past":            {http.MethodPost, tokensPath, alice, map[string]any{"name": "x", "user_name": "alice", "expires_at": f.clock.Now().Add(-time.Hour).Format(time.RFC3339)}, http.StatusBadRequest},
			"no name":                          {http.MethodPost, tokensPath, alice, map[string]any{"user_name": "alice"}, http.StatusBadRequest},
			"a bad network":                    {http.MethodPost, tokensPath, alice, map[string]any{"name": "x", "user_name": "alice", "networks": []string{"two words"}}, http.StatusBadRequest},
			"neither id nor username":          {http.MethodDelete, tokensPath, alice, nil, http.StatusBadRequest},
			"a logout of another user's token": {http.MethodPost, "/api/v1/users/logout?username=bob", alice, nil, http.StatusForbidden},
			"a logout with the master key":     {http.MethodPost, "/api/v1/users/logout", testMasterKey, nil, http.StatusForbidden},
		} {
			before := f.storedTokens("alice") + f.storedTokens("bob")
			r := f.request(c.method, c.path, c.bearer, c.body)
			if r.status != c.status {
				t.Errorf("%s: status %d, want %d; body %s", name, r.status, c.status, r.body)
				continue
			}
			wantError(t, r, c.status)
			if after := f.storedTokens("alice") + f.storedTokens("bob"); after != before {
				t.Errorf("%s: the store went from %d tokens to %d", name, before, after)
			}
		}
		// The tokens refused above are all still good.
		mustCheck(t, f, tok)
		mustCheck(t, f, ro)
		mustCheck(t, f, bobs)
	})
}

// TestAccessTokenRevokesOnlyItself: an access token, scoped to a network
// or not, revokes itself and no other token of its user, one by one or
// all at once; the user's own login and the master key revoke the rest.
func TestAccessTokenRevokesOnlyItself(t *testing.T) {
	f := newFixture(t)
	f.addUser("alice", "correct horse battery")
	alice := f.userToken("alice", "correct horse battery")
	scoped := f.createToken(alice, map[string]any{"name": "office", "user_name": "alice", "networks": []string{"office"}})
	full := f.createToken(alice, map[string]any{"name": "ci", "user_name": "alice"})
	other := f.createToken(alice, map[string]any{"name": "other", "user_name": "alice"})
	last := f.createToken(alice, map[string]any{"name": "last", "user_name": "alice"})
	otherID := mustCheck(t, f, other).TokenID
	for name, bearer := range map[string]string{"scoped": scoped, "unscoped": full} {
		wantError(t, f.request(http.MethodDelete, tokensPath+"?id="+otherID, bearer, nil), http.StatusForbidden)
		wantError(t, f.request(http.MethodDelete, tokensPath+"?username=alice", bearer, nil), http.StatusForbidden)
		if n := f.storedTokens("alice"); n != 4 {
			t.Fatalf("the %s token's refused revocations left %d tokens of 4", name, n)
		}
	}
	mustCheck(t, f, other)
	// Each revokes itself.
	for _, tok := range []string{scoped, full} {
		wantStatus(t, f.request(http.MethodDelete, tokensPath+"?id="+mustCheck(t, f, tok).TokenID, tok, nil), http.StatusOK)
		if _, err := f.auth.CheckBearer(context.Background(), tok); err == nil {
			t.Fatal("a token that revoked itself still works")
		}
	}
	// The master key revokes one, the user's login all the rest.
	wantStatus(t, f.request(http.MethodDelete, tokensPath+"?id="+otherID, testMasterKey, nil), http.StatusOK)
	mustCheck(t, f, last)
	wantStatus(t, f.request(http.MethodDelete, tokensPath+"?username=alice", alice, nil), http.StatusOK)
	if n := f.storedTokens("alice"); n != 0 {
		t.Fatalf("%d tokens left after the user revoked them all", n)
	}
}

func mustCheck(t *testing.T, f *fixture, tok string) nmauth.Principal {
	t.Helper()
	p, err := f.auth.CheckBearer(context.Background(), tok)
	if err != nil {
		t.Fatalf("CheckBearer: %v", err)
	}
	return p
}

// TestAccessTokenScope checks the scope the token carries and the
// middleware that enforces it.
func TestAccessTokenScope(t *testing.T) {
	f := newFixture(t)
	f.addUser("alice", "correct horse battery")
	ctx := context.Background()
	master := nmauth.Principal{Kind: nmauth.KindMaster}
	_, made, err := f.auth.CreateAccessToken(ctx, master, nmauth.AccessTokenRequest{
		Name: "net", UserName: "alice", ReadOnly: true, Networks: []string{"office", "home", "office"},
	})
	if err != nil {
		t.Fatal(err)
	}
	p := mustCheck(t, f, made)
	if got := p.Networks(); len(got) != 2 || got[0] != "home" || got[1] != "office" {
		t.Fatalf("Networks() = %v, want [home office]", got)
	}
	for _, c := range []struct {
		write   bool
		network string
		want    bool
	}{{false, "home", true}, {true, "home", false}, {false, "lab", false}, {false, "", false}} {
		if got := p.Permits(c.write, c.network); got != c.want {
			t.Errorf("Permits(write=%v, %q) = %v, want %v", c.write, c.network, got, c.want)
		}
	}
	guard := f.auth.RequireScope(func(r *http.Request) string { return r.PathValue("network") })
	mux := http.NewServeMux()
	mux.Handle("/api/networks/{network}", f.auth.Middleware(guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))))
	for _, c := range []struct {
		method, network string
		status          int
	}{{http.MethodGet, "home", 204}, {http.MethodPut, "home", 403}, {http.MethodGet, "lab", 403}} {
		req, _ := http.NewRequest(c.method, "/api/networks/"+c.network, nil)
		req.Header.Set("Authorization", "Bearer "+made)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code != c.status {
			t.Errorf("%s %s: status %d, want %d", c.method, c.network, rec.Code, c.status)
		}
	}
}

// TestAccessTokenDiesWithUser: a disable, a password change and a delete
// each end the user's access tokens, and a user made again under the
// name does not get them back.
func TestAccessTokenDiesWithUser(t *testing.T) {
	ctx := context.Background()
	master := nmauth.Principal{Kind: nmauth.KindMaster}
	for name, revoke := range map[string]func(a *nmauth.Authenticator) error{
		"disable": func(a *nmauth.Authenticator) error { return a.Admin().DisableUser(ctx, "alice") },
		"password": func(a *nmauth.Authenticator) error {
			return a.Admin().SetUserPassword(ctx, "alice", "a whole new password")
		},
		"delete": func(a *nmauth.Authenticator) error {
			if err := a.Admin().DeleteUser(ctx, "alice"); err != nil {
				return err
			}
			return a.Admin().CreateUser(ctx, "alice", "correct horse battery")
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.addUser("alice", "correct horse battery")
			_, made, err := f.auth.CreateAccessToken(ctx, master, nmauth.AccessTokenRequest{Name: "x", UserName: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			mustCheck(t, f, made)
			if err := revoke(f.auth); err != nil {
				t.Fatal(err)
			}
			if _, err := f.auth.CheckBearer(ctx, made); err == nil {
				t.Fatal("the access token outlived its user's " + name)
			}
		})
	}
}

// touchCounter counts the writes of last use that reach the store.
type touchCounter struct {
	*nmauth.MemoryStore
	touches atomic.Int64
}

func (s *touchCounter) TouchAccessToken(ctx context.Context, id string, used time.Time) error {
	s.touches.Add(1)
	return s.MemoryStore.TouchAccessToken(ctx, id, used)
}

// TestAccessTokenLastUsedCoalesced: a thousand checks in a minute write
// the last use once, and the list shows it.
func TestAccessTokenLastUsedCoalesced(t *testing.T) {
	store := &touchCounter{MemoryStore: nmauth.NewMemoryStore()}
	f := newFixture(t, func(c *nmauth.Config) { c.Store = store })
	f.addUser("alice", "correct horse battery")
	tok := f.createToken(testMasterKey, map[string]any{"name": "ci", "user_name": "alice"})
	waitTouches := func(want int64) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); store.touches.Load() < want && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond) // room for a write too many
		if got := store.touches.Load(); got != want {
			t.Fatalf("%d writes of last use, want %d", got, want)
		}
	}
	for range 1000 {
		mustCheck(t, f, tok)
		f.clock.Advance(50 * time.Millisecond)
	}
	waitTouches(1)
	f.clock.Advance(time.Minute)
	mustCheck(t, f, tok)
	waitTouches(2)
	list := f.listTokens(testMasterKey, "alice")
	if used, _ := list[0]["lastUsed"].(string); used == "" {
		t.Fatalf("the list shows no last use: %v", list)
	}
}

// TestLogout: a logout ends the token it is called with, on this replica
// at once and on another within its status cache's lifetime, and no
// other token of the user.
func TestLogout(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		other, err := nmauth.New(nmauth.Config{Store: f.store, Secrets: [][]byte{testSecret(1)}, Now: f.clock.Now, Wire: w})
		if err != nil {
			t.Fatal(err)
		}
		f.addUser("alice", "correct horse battery")
		first := f.userToken("alice", "correct horse battery")
		f.clock.Advance(time.Second)
		second := f.userToken("alice", "correct horse battery")
		ctx := context.Background()
		if _, err := other.CheckBearer(ctx, first); err != nil {
			t.Fatal(err)
		}
		wantStatus(t, f.request(http.MethodPost, "/api/v1/users/logout?username=alice", first, nil), http.StatusOK)
		wantError(t, f.request(http.MethodPost, "/api/v1/users/logout", first, nil), http.StatusUnauthorized)
		f.clock.Advance(2 * time.Second) // the other replica's status cache lifetime
		if _, err := other.CheckBearer(ctx, first); err == nil {
			t.Fatal("another replica still accepts a logged-out token")
		}
		mustCheck(t, f, second)
		// Once the token has expired, its revocation goes at the next
		// logout.
		f.clock.Advance(time.Hour)
		third := f.userToken("alice", "correct horse battery")
		wantStatus(t, f.request(http.MethodPost, "/api/v1/users/logout", third, nil), http.StatusOK)
		u, err := f.store.GetUser(ctx, "alice")
		if err != nil || len(nmauth.StateOf(&u.State).LoggedOut) != 1 {
			t.Fatalf("logged-out tokens kept: %+v, %v; want only the live one", nmauth.StateOf(&u.State).LoggedOut, err)
		}
		// An access token logs out by being deleted.
		tok := f.createToken(testMasterKey, map[string]any{"name": "ci", "user_name": "alice"})
		wantStatus(t, f.request(http.MethodPost, "/api/v1/users/logout", tok, nil), http.StatusOK)
		if n := f.storedTokens("alice"); n != 0 {
			t.Fatalf("%d access tokens left after their logout", n)
		}
	})
}

// TestRequireAccessTokens: Require(KindUser) keeps access tokens out (403),
// and a route that names KindAccessToken lets them in.
func TestRequireAccessTokens(t *testing.T) {
	f := newFixture(t)
	f.addUser("alice", "correct horse battery")
	tok := f.createToken(testMasterKey, map[string]any{"name": "ci", "user_name": "alice"})
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	for _, c := range []struct {
		kinds []nmauth.PrincipalKind
		want  int
	}{
		{[]nmauth.PrincipalKind{nmauth.KindUser}, http.StatusForbidden},
		{[]nmauth.PrincipalKind{nmauth.KindUser, nmauth.KindAccessToken}, http.StatusNoContent},
	} {
		req := httptest.NewRequest(http.MethodGet, "/api/networks", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		f.auth.Require(c.kinds...)(ok).ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("Require(%v): %d, want %d", c.kinds, rec.Code, c.want)
		}
	}
}

// TestDeadAccessTokensLeave: a token revoked by a move of its user's
// generation, or expired, leaves the list and frees its place under
// Config.MaxAccessTokens.
func TestDeadAccessTokensLeave(t *testing.T) {
	ctx := context.Background()
	master := nmauth.Principal{Kind: nmauth.KindMaster}
	f := newFixture(t, func(c *nmauth.Config) { c.MaxAccessTokens = 2 })
	f.addUser("alice", "correct horse battery")
	create := func(name string, ttl time.Duration) error {
		req := nmauth.AccessTokenRequest{Name: name, UserName: "alice"}
		if ttl > 0 {
			req.ExpiresAt = f.clock.Now().Add(ttl)
		}
		_, _, err := f.auth.CreateAccessToken(ctx, master, req)
		return err
	}
	for _, name := range []string{"a", "b"} {
		if err := create(name, 0); err != nil {
			t.Fatal(err)
		}
	}
	// A new password revokes both.
	if err := f.auth.Admin().SetUserPassword(ctx, "alice", "a whole new password"); err != nil {
		t.Fatal(err)
	}
	if list := f.listTokens(testMasterKey, "alice"); len(list) != 0 {
		t.Fatalf("after the revocation the list = %v, want none", list)
	}
	if err := create("c", 2*time.Hour); err != nil {
		t.Fatalf("creating after the revocation: %v", err)
	}
	if err := create("d", 0); err != nil {
		t.Fatalf("creating a second after the revocation: %v", err)
	}
	// c expires; d lives on.
	f.clock.Advance(3 * time.Hour)
	list := f.listTokens(testMasterKey, "alice")
	if len(list) != 1 || list[0]["name"] != "d" {
		t.Fatalf("after c expired the list = %v, want d alone", list)
	}
	if err := create("e", 0); err != nil {
		t.Fatalf("creating in the place of the expired token: %v", err)
	}
	if n := f.storedTokens("alice"); n != 2 {
		t.Fatalf("the store holds %d tokens of alice, want 2: the dead ones deleted", n)
	}
}
