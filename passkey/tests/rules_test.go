package tests_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/passkey"
)

// listIDs lists a user's passkeys over HTTP and returns their ids.
func (h *harness) listIDs(user, bearer string) []string {
	h.t.Helper()
	r := h.send(http.MethodGet, "/api/users/"+user+"/passkeys", bearer, nil)
	wantStatus(h.t, r, http.StatusOK)
	var ids []string
	for _, p := range r.response(h.t)["passkeys"].([]any) {
		ids = append(ids, p.(map[string]any)["id"].(string))
	}
	return ids
}

// TestRemovingTheLastFactor lets a user remove a passkey while another
// second factor remains, and the last one only within the presence window
// of a login that passed one; the master key may always.
func TestRemovingTheLastFactor(t *testing.T) {
	h := newHarness(t, options{})
	h.addUser("alice")
	tok := h.userToken("alice")
	fresh := h.register("alice", tok, "laptop", newSoftKey(t))["authToken"].(string)
	phone := newSoftKey(t)
	h.register("alice", fresh, "phone", phone)
	ids := h.listIDs("alice", fresh)
	if len(ids) != 2 {
		t.Fatalf("alice has %d passkeys, want 2", len(ids))
	}

	wantStatus(t, h.post("/api/users/alice/passkeys/"+ids[0]+"/remove", fresh, nil), http.StatusOK)
	h.clock.Advance(presenceWindow + time.Second)
	before := h.state("alice")
	wantError(t, h.post("/api/users/alice/passkeys/"+ids[1]+"/remove", fresh, nil), http.StatusForbidden)
	wantSame(t, before, h.state("alice"))
	wantError(t, h.post("/api/users/alice/passkeys/"+ids[0]+"/remove", fresh, nil), http.StatusNotFound)
	wantError(t, h.post("/api/users/alice/passkeys/not-base64!/remove", fresh, nil), http.StatusNotFound)

	// A login through the passkey is a recent proof of presence.
	k := newSoftKey(t)
	h.register("alice", h.secondFactorLogin(t, "alice", phone), "tablet", k) // needs presence: alice has one
	recent := h.secondFactorLogin(t, "alice", k)
	wantStatus(t, h.post("/api/users/alice/passkeys/"+ids[1]+"/remove", recent, nil), http.StatusOK)
	h.clock.Advance(presenceWindow + time.Second)
	last := h.listIDs("alice", recent)
	wantError(t, h.post("/api/users/alice/passkeys/"+last[0]+"/remove", recent, nil), http.StatusForbidden)
	wantStatus(t, h.post("/api/users/alice/passkeys/"+last[0]+"/remove", testMasterKey, nil), http.StatusOK)
	if ids := h.listIDs("alice", testMasterKey); len(ids) != 0 {
		t.Errorf("alice still has passkeys %v", ids)
	}
	if _, pre := h.passwordLogin("alice"); pre {
		t.Error("without passkeys alice's password login still asks for a second factor")
	}
	if n := h.events.count(passkey.EventRemoved); n != 3 {
		t.Errorf("%d %s events, want 3", n, passkey.EventRemoved)
	}
}

// secondFactorLogin logs user in with the password and k's assertion, and
// returns the user token.
func (h *harness) secondFactorLogin(t *testing.T, user string, k *softKey) string {
	t.Helper()
	pre, isPre := h.passwordLogin(user)
	if !isPre {
		t.Fatalf("%s's password login asked for no second factor", user)
	}
	r := h.finishSecondFactor(user, pre, k.get(t, assertion(h.beginSecondFactor(user, pre), k)))
	wantStatus(t, r, http.StatusOK)
	return r.token(t)
}

// TestAddingNeedsPresence refuses a second passkey to a token that did not
// pass a second factor lately.
func TestAddingNeedsPresence(t *testing.T) {
	h := newHarness(t, options{})
	h.addUser("alice")
	k := newSoftKey(t)
	fresh := h.register("alice", h.userToken("alice"), "laptop", k)["authToken"].(string)
	h.clock.Advance(presenceWindow + time.Second)
	before := h.state("alice")
	wantError(t, h.post("/api/users/alice/passkeys/register/begin", fresh, map[string]string{"name": "phone"}), http.StatusForbidden)
	wantSame(t, before, h.state("alice"))
	// A user token that passed no second factor at all, minted by the
	// application, is no proof either.
	plain := h.plainUserToken("alice")
	wantError(t, h.post("/api/users/alice/passkeys/register/begin", plain, map[string]string{"name": "phone"}), http.StatusForbidden)
	recent := h.secondFactorLogin(t, "alice", k)
	for _, name := range []string{"", "   ", strings.Repeat("a", 65), "tab\there", "\u202enul\x00"} {
		r := h.post("/api/users/alice/passkeys/register/begin", recent, map[string]string{"name": name})
		wantError(t, r, http.StatusBadRequest)
	}
}

// TestAdminReset removes every passkey of a user with the master key only,
// revokes the user's tokens, and leaves the password alone to log in.
func TestAdminReset(t *testing.T) {
	h := newHarness(t, options{})
	h.addUser("alice")
	fresh := h.register("alice", h.userToken("alice"), "laptop", newSoftKey(t))["authToken"].(string)
	wantError(t, h.post("/api/users/alice/passkeys/reset", fresh, nil), http.StatusForbidden)
	wantError(t, h.post("/api/users/nobody/passkeys/reset", testMasterKey, nil), http.StatusNotFound)
	r := h.post("/api/users/alice/passkeys/reset", testMasterKey, nil)
	wantStatus(t, r, http.StatusOK)
	if n := r.response(t)["removed"]; n != 1.0 {
		t.Errorf("removed %v, want 1", n)
	}
	if _, err := h.principal(fresh); !errors.Is(err, nmauth.ErrUnauthenticated) {
		t.Errorf("alice's token after the reset: %v, want revoked", err)
	}
	if _, pre := h.passwordLogin("alice"); pre {
		t.Error("after the reset alice's password login still asks for a second factor")
	}
	if n := h.events.count(passkey.EventReset); n != 1 {
		t.Errorf("%d %s events, want 1", n, passkey.EventReset)
	}
}

// TestAccountCreatedAgain gives a user created again under a deleted
// user's name none of the old passkeys: no second factor at password
// login, no passwordless login with them.
func TestAccountCreatedAgain(t *testing.T) {
	h := newHarness(t, options{passwordless: true})
	h.addUser("alice")
	k := newSoftKey(t)
	h.register("alice", h.userToken("alice"), "laptop", k)
	ctx := context.Background()
	if err := h.auth.Admin().DeleteUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	h.addUser("alice")
	if _, pre := h.passwordLogin("alice"); pre {
		t.Error("the new alice's password login asks for the old alice's passkey")
	}
	wantError(t, h.finishPasswordless(k.get(t, assertion(h.beginPasswordless(), k))), http.StatusUnauthorized)
	if ids := h.listIDs("alice", testMasterKey); len(ids) != 0 {
		t.Errorf("the new alice lists the old passkeys %v", ids)
	}
	// Her own first passkey replaces the old record.
	k2 := newSoftKey(t)
	h.register("alice", h.userToken("alice"), "new laptop", k2)
	wantStatus(t, h.finishPasswordless(k2.get(t, assertion(h.beginPasswordless(), k2))), http.StatusOK)
	if rec := h.record("alice"); len(rec.Passkeys) != 1 || rec.Passkeys[0].Name != "new laptop" {
		t.Errorf("alice's record holds %+v, want only the new passkey", rec.Passkeys)
	}
}

// TestChallengeAcrossReplicas begins a login on one replica and finishes it
// on another over one database; the challenge is then spent on both, and
// of concurrent finishes of one answer exactly one logs in.
func TestChallengeAcrossReplicas(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		if b.name == "memory" {
			t.Skip("a memory store is one process's")
		}
		first, again := b.fresh(t)
		users := nmauth.NewMemoryStore()
		c := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
		a := newHarness(t, options{passwordless: true, store: first(t), users: users, clock: c})
		other := newHarness(t, options{passwordless: true, store: again(t), users: users, clock: c})
		a.addUser("alice")
		k := newSoftKey(t)
		a.register("alice", a.userToken("alice"), "laptop", k)

		answer := k.get(t, assertion(a.beginPasswordless(), k))
		wantStatus(t, other.finishPasswordless(answer), http.StatusOK)
		wantError(t, a.finishPasswordless(answer), http.StatusBadRequest)

		answer = k.get(t, assertion(other.beginPasswordless(), k))
		statuses := make(chan int, 8)
		var wg sync.WaitGroup
		for i := range 8 {
			h := []*harness{a, other}[i%2]
			wg.Go(func() { statuses <- h.finishPasswordless(answer).status })
		}
		wg.Wait()
		close(statuses)
		ok := 0
		for s := range statuses {
			switch s {
			case http.StatusOK:
				ok++
			case http.StatusBadRequest:
			default:
				t.Errorf("a concurrent finish answered %d", s)
			}
		}
		if ok != 1 {
			t.Errorf("%d of 8 concurrent finishes of one answer logged in, want 1", ok)
		}
	})
}

// movingStore moves a passkey's sign count on, as a login on another
// replica would, just before the next update of a record.
type movingStore struct {
	passkey.Store
	mu    sync.Mutex
	armed bool
}

func (s *movingStore) UpdateRecord(ctx context.Context, user string, fn func(*passkey.Record) error) error {
	s.mu.Lock()
	armed := s.armed
	s.armed = false
	s.mu.Unlock()
	if armed {
		err := s.Store.UpdateRecord(ctx, user, func(r *passkey.Record) error { r.Passkeys[0].SignCount += 10; return nil })
		if err != nil {
			return err
		}
	}
	return s.Store.UpdateRecord(ctx, user, fn)
}

// TestSignCountMovedMeanwhile refuses an assertion whose count was right
// when checked but was passed by a concurrent login before it was stored.
func TestSignCountMovedMeanwhile(t *testing.T) {
	store := &movingStore{Store: passkey.NewMemoryStore()}
	h := newHarness(t, options{passwordless: true, store: store})
	h.addUser("alice")
	k := newSoftKey(t)
	h.register("alice", h.userToken("alice"), "laptop", k)
	opts := h.beginPasswordless()
	store.mu.Lock()
	store.armed = true
	store.mu.Unlock()
	wantError(t, h.finishPasswordless(k.get(t, assertion(opts, k))), http.StatusUnauthorized)
	if got := h.record("alice").Passkeys[0].SignCount; got != 10 {
		t.Errorf("sign count %d, want the concurrent login's 10", got)
	}
	if n := h.events.count(passkey.EventSignCountRegressed); n != 1 {
		t.Errorf("%d %s events, want 1", n, passkey.EventSignCountRegressed)
	}
}

// TestPasswordlessOff serves no passwordless routes unless turned on, and
// asks for no discoverable passkey.
func TestPasswordlessOff(t *testing.T) {
	h := newHarness(t, options{})
	wantError(t, h.post("/api/users/adm/passkey/begin", "", nil), http.StatusNotFound)
	if _, err := h.pk.BeginLogin(context.Background()); !errors.Is(err, passkey.ErrPasswordlessOff) {
		t.Errorf("BeginLogin: %v, want ErrPasswordlessOff", err)
	}
	h.addUser("alice")
	_, opts := h.beginRegistration("alice", h.userToken("alice"), "laptop")
	sel, _ := opts["authenticatorSelection"].(map[string]any)
	if sel["residentKey"] != "discouraged" || sel["userVerification"] != "preferred" {
		t.Errorf("authenticatorSelection %v, want residentKey discouraged, userVerification preferred", sel)
	}
	on := newHarness(t, options{passwordless: true})
	on.addUser("alice")
	_, opts = on.beginRegistration("alice", on.userToken("alice"), "laptop")
	sel, _ = opts["authenticatorSelection"].(map[string]any)
	if sel["residentKey"] != "required" || sel["userVerification"] != "required" {
		t.Errorf("with passwordless on, authenticatorSelection %v, want residentKey and userVerification required", sel)
	}
}

// TestRoutesRefuseWrongRequests answers wrong methods, bearers and bodies
// with the envelope, and passes other paths to the Authenticator.
func TestRoutesRefuseWrongRequests(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		h := newHarness(t, options{wire: w, passwordless: true})
		h.addUser("alice")
		tok := h.userToken("alice")
		r := h.send(http.MethodGet, "/api/users/alice/passkeys/register/begin", tok, nil)
		wantError(t, r, http.StatusMethodNotAllowed)
		if r.header.Get("Allow") != http.MethodPost {
			t.Errorf("Allow %q, want POST", r.header.Get("Allow"))
		}
		wantError(t, h.post("/api/users/alice/passkeys", tok, nil), http.StatusMethodNotAllowed)
		wantError(t, h.send(http.MethodGet, "/api/users/alice/passkeys", "", nil), http.StatusUnauthorized)
		wantError(t, h.post("/api/users/alice/auth/passkey/begin", tok, nil), http.StatusUnauthorized)
		wantError(t, h.post("/api/users/alice/passkeys/register/finish", tok, []byte(`{"id":`)), http.StatusBadRequest)
		wantError(t, h.post("/api/users/alice/passkeys/register/finish", tok, []byte(`{"id":"x","rawId":"x","type":"public-key"}`)), http.StatusBadRequest)
		wantError(t, h.post("/api/users/adm/passkey/finish", "", []byte(`[]`)), http.StatusBadRequest)
		wantError(t, h.send(http.MethodPost, "/api/users/adm/passkey/finish", "", []byte("{}")), http.StatusBadRequest)
		req := h.send(http.MethodPost, "/api/users/alice/passkeys/register/begin", tok, nil)
		wantError(t, req, http.StatusUnsupportedMediaType)
		wantError(t, h.post("/api/no/such/route", "", nil), http.StatusNotFound)
	})
}

// TestConfigRules refuses a relying party or an origin that browsers
// would refuse, so that a mistake shows at start rather than at login.
func TestConfigRules(t *testing.T) {
	ext := new(nmauth.Extension)
	if _, err := nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{make([]byte, 32)}, Extensions: []*nmauth.Extension{ext}}); err != nil {
		t.Fatal(err)
	}
	good := passkey.Config{Extension: ext, Store: passkey.NewMemoryStore(), RPID: "example.com", Origins: []string{"https://example.com", "https://auth.example.com:8443"}}
	if _, err := passkey.New(good); err != nil {
		t.Fatalf("a good configuration: %v", err)
	}
	local := good
	local.RPID, local.Origins = "localhost", []string{"http://localhost:8081"}
	if _, err := passkey.New(local); err != nil {
		t.Fatalf("http on localhost: %v", err)
	}
	for name, edit := range map[string]func(*passkey.Config){
		"no RPID":                func(c *passkey.Config) { c.RPID = "" },
		"an IP address":          func(c *passkey.Config) { c.RPID = "192.0.2.1" },
		"an RPID with a port":    func(c *passkey.Config) { c.RPID = "example.com:443" },
		"no origins":             func(c *passkey.Config) { c.Origins = nil },
		"http off localhost":     func(c *passkey.Config) { c.Origins = []string{"http://example.com"} },
		"an origin of elsewhere": func(c *passkey.Config) { c.Origins = []string{"https://example.org"} },
		"a suffix, not a parent": func(c *passkey.Config) { c.Origins = []string{"https://badexample.com"} },
		"an origin with a path":  func(c *passkey.Config) { c.Origins = []string{"https://example.com/login"} },
		"no Store":               func(c *passkey.Config) { c.Store = nil },
		"no Extension":           func(c *passkey.Config) { c.Extension = nil },
		"an unregistered one":    func(c *passkey.Config) { c.Extension = new(nmauth.Extension) },
	} {
		c := good
		edit(&c)
		if _, err := passkey.New(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// brokenStore fails every call, as a database that is down does.
type brokenStore struct{ passkey.Store }

var errDown = errors.New("database down")

func (brokenStore) GetRecord(context.Context, string) (passkey.Record, error) {
	return passkey.Record{}, errDown
}

func (brokenStore) PutChallenge(context.Context, passkey.Challenge, time.Time, int) error {
	return errDown
}

// TestStoreDown answers 503 with Retry-After, for the passkey routes and
// for a password login that must ask whether the user has a passkey.
func TestStoreDown(t *testing.T) {
	h := newHarness(t, options{store: brokenStore{passkey.NewMemoryStore()}, passwordless: true})
	h.addUser("alice")
	for _, r := range []reply{
		h.post("/api/users/adm/authenticate", "", map[string]string{"username": "alice", "password": testPassword}),
		h.post("/api/users/adm/passkey/begin", "", nil),
		h.send(http.MethodGet, "/api/users/alice/passkeys", testMasterKey, nil),
	} {
		wantError(t, r, http.StatusServiceUnavailable)
		if r.header.Get("Retry-After") == "" {
			t.Errorf("503 without Retry-After: %s", r.body)
		}
	}
}

// TestAdministratorsTools lists and resets a user's passkeys without a
// relying party, as nmauthd's admin commands do.
func TestAdministratorsTools(t *testing.T) {
	h := newHarness(t, options{})
	h.addUser("alice")
	h.register("alice", h.userToken("alice"), "laptop", newSoftKey(t))
	ctx := context.Background()
	for _, err := range []error{
		func() error { _, err := passkey.ListPasskeys(ctx, new(nmauth.Extension), h.store, "alice"); return err }(),
		func() error {
			_, err := passkey.ResetPasskeys(ctx, new(nmauth.Extension), h.store, "alice")
			return err
		}(),
	} {
		if !errors.Is(err, nmauth.ErrNotRegistered) {
			t.Errorf("an unregistered Extension: %v, want ErrNotRegistered", err)
		}
	}
	list, err := passkey.ListPasskeys(ctx, h.ext, h.store, "Alice")
	if err != nil || len(list) != 1 || list[0].Name != "laptop" {
		t.Fatalf("ListPasskeys = %+v, %v; want laptop", list, err)
	}
	if _, err := passkey.ListPasskeys(ctx, h.ext, h.store, "nobody"); !errors.Is(err, nmauth.ErrNotFound) {
		t.Errorf("ListPasskeys of nobody: %v, want ErrNotFound", err)
	}
	if n, err := passkey.ResetPasskeys(ctx, h.ext, h.store, "alice"); err != nil || n != 1 {
		t.Fatalf("ResetPasskeys = %d, %v; want 1", n, err)
	}
	if list, err := passkey.ListPasskeys(ctx, h.ext, h.store, "alice"); err != nil || len(list) != 0 {
		t.Errorf("after the reset ListPasskeys = %+v, %v", list, err)
	}
}
