package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/internal/state"
)

// adminServer is nmauthd's mux with the admin routes over a SQLite
// database, served on a loopback port.
type adminServer struct {
	t    *testing.T
	wire nmauth.WireProfile
	url  string
	auth *nmauth.Authenticator
	db   *database

	mu     sync.Mutex
	events []nmauth.Event
}

// audited returns the events of type typ so far.
func (s *adminServer) audited(typ nmauth.EventType) []nmauth.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []nmauth.Event
	for _, e := range s.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

const adminTestPassword = "correct horse battery"

func newAdminServer(t *testing.T, users, hosts []string) *adminServer {
	t.Helper()
	return newAdminServerIn(t, nmauth.WireSpec, users, hosts)
}

// newAdminServerIn is newAdminServer answering in the wire profile wire.
func newAdminServerIn(t *testing.T, wire nmauth.WireProfile, users, hosts []string) *adminServer {
	t.Helper()
	ctx := context.Background()
	db, err := openDatabase(ctx, filepath.Join(t.TempDir(), "nmauth.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	mk, err := nmauth.NewMasterKey(testMasterKey, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &adminServer{t: t, wire: wire, db: db}
	auth, err := nmauth.New(nmauth.Config{Store: db, Secrets: [][]byte{bytes.Repeat([]byte{9}, 32)}, MasterKey: mk, Wire: wire,
		OnEvent: func(_ context.Context, e nmauth.Event) {
			s.mu.Lock()
			s.events = append(s.events, e)
			s.mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	s.auth = auth
	for _, u := range users {
		if err := auth.Admin().CreateUser(ctx, u, adminTestPassword); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range hosts {
		if err := auth.Admin().CreateHost(ctx, h, "", adminTestPassword); err != nil {
			t.Fatal(err)
		}
	}
	mux := newMux(auth, wire)
	addAdminRoutes(mux, auth, slog.New(slog.DiscardHandler))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// admin sends one request to an admin route and checks the exchange
// against the document of the server's profile.
func (s *adminServer) admin(method, path, bearer string) reply {
	s.t.Helper()
	return callURL(s.t, s.wire, method, s.url+path, bearer, nil)
}

// login tries a user login and returns its status and token.
func (s *adminServer) login(name, password string) (int, string) {
	s.t.Helper()
	r := callURL(s.t, s.wire, "POST", s.url+"/api/users/adm/authenticate", "",
		map[string]string{"username": name, "password": password})
	if r.status != http.StatusOK {
		return r.status, ""
	}
	return r.status, decode[envelope[userLogin]](s.t, r, http.StatusOK).Response.AuthToken
}

type adminUser struct {
	Name              string     `json:"name"`
	Disabled          bool       `json:"disabled"`
	TOTP              bool       `json:"totp"`
	RecoveryCodesLeft int        `json:"recoveryCodesLeft"`
	LockedUntil       *time.Time `json:"lockedUntil"`
}

type adminHost struct {
	ID          string     `json:"id"`
	MACAddress  string     `json:"macaddress"`
	Disabled    bool       `json:"disabled"`
	LockedUntil *time.Time `json:"lockedUntil"`
}

type adminListPage[T any] struct {
	Items []T     `json:"items"`
	Next  *string `json:"next"`
}

// allowedKeys are the only JSON keys the listings may hold.
var allowedKeys = map[string][]string{
	"users": {"items", "next", "name", "disabled", "totp", "recoveryCodesLeft", "lockedUntil"},
	"hosts": {"items", "next", "id", "macaddress", "disabled", "lockedUntil"},
}

// checkKeys fails on any key of the JSON document body outside allowed.
func checkKeys(t *testing.T, body []byte, allowed []string) {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("not JSON: %s", body)
	}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if !slices.Contains(allowed, k) {
					t.Errorf("the answer has the key %q: %s", k, body)
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
}

// list reads every page of kind ("users" or "hosts") limit at a time,
// checking each page's keys, and returns the pages.
func list[T any](s *adminServer, kind string, limit int) [][]T {
	s.t.Helper()
	var pages [][]T
	after := ""
	for {
		q := url.Values{"limit": {strconv.Itoa(limit)}}
		if after != "" {
			q.Set("after", after)
		}
		r := s.admin("GET", "/api/admin/"+kind+"?"+q.Encode(), testMasterKey)
		checkKeys(s.t, r.body, allowedKeys[kind])
		p := decode[adminListPage[T]](s.t, r, http.StatusOK)
		pages = append(pages, p.Items)
		if p.Next == nil {
			return pages
		}
		if *p.Next == "" || len(pages) > 100 {
			s.t.Fatalf("page %d: next %q", len(pages), *p.Next)
		}
		after = *p.Next
	}
}

func (s *adminServer) users() map[string]adminUser {
	s.t.Helper()
	m := map[string]adminUser{}
	for _, page := range list[adminUser](s, "users", maxAdminPage) {
		for _, u := range page {
			m[u.Name] = u
		}
	}
	return m
}

func wantError(t *testing.T, r reply, status int) {
	t.Helper()
	e := decode[envelope[any]](t, r, status)
	if e.Code != status || e.Message == "" {
		t.Errorf("error body %s, want code %d and a message", r.body, status)
	}
}

// TestAdminAPINeedsMasterKey: without a bearer 401, with a user's or a
// host's token 403, with the master key 200, on every admin route.
func TestAdminAPINeedsMasterKey(t *testing.T) {
	s := newAdminServer(t, []string{"alice"}, []string{"host-1"})
	_, userToken := s.login("alice", adminTestPassword)
	r := callURL(t, nmauth.WireSpec, "POST", s.url+"/api/hosts/adm/authenticate", "",
		map[string]string{"id": "host-1", "password": adminTestPassword})
	hostToken := decode[envelope[hostLogin]](t, r, http.StatusOK).Response.AuthToken
	routes := []struct{ method, path string }{
		{"GET", "/api/admin/users"},
		{"GET", "/api/admin/hosts"},
		{"POST", "/api/admin/users/alice/disable"},
		{"POST", "/api/admin/users/alice/enable"},
		{"POST", "/api/admin/users/alice/totp-reset"},
		{"POST", "/api/admin/hosts/host-1/disable"},
		{"POST", "/api/admin/hosts/host-1/enable"},
	}
	for _, rt := range routes {
		r := s.admin(rt.method, rt.path, "")
		wantError(t, r, http.StatusUnauthorized)
		if r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s %s without a bearer: no WWW-Authenticate", rt.method, rt.path)
		}
		wantError(t, s.admin(rt.method, rt.path, "not-a-token"), http.StatusUnauthorized)
		wantError(t, s.admin(rt.method, rt.path, userToken), http.StatusForbidden)
		wantError(t, s.admin(rt.method, rt.path, hostToken), http.StatusForbidden)
	}
	// Nothing above changed alice: her token still works.
	if p := decode[principal](t, callURL(t, nmauth.WireSpec, "GET", s.url+"/api/whoami", userToken, nil), http.StatusOK); p.Name != "alice" {
		t.Errorf("whoami after the refused calls: %+v", p)
	}
	for _, rt := range routes {
		if r := s.admin(rt.method, rt.path, testMasterKey); r.status != http.StatusOK {
			t.Errorf("%s %s with the master key: %d %s", rt.method, rt.path, r.status, r.body)
		}
	}
}

// TestAdminAPIListPages walks users and hosts over several pages and checks
// that every account comes exactly once, in order, with no secret.
func TestAdminAPIListPages(t *testing.T) {
	users := []string{"erin", "alice", "dave", "bob", "carol"}
	hosts := []string{"host-c", "host-a", "host-b"}
	s := newAdminServer(t, users, hosts)
	ctx := context.Background()

	// Give carol TOTP, and bob a backoff an hour long from one address.
	enr, err := s.auth.InitTOTP(ctx, nmauth.Principal{Kind: nmauth.KindMaster}, "carol")
	if err != nil {
		t.Fatal(err)
	}
	done, err := s.auth.CompleteTOTP(ctx, nmauth.Principal{Kind: nmauth.KindMaster}, "carol",
		enr.URL, enr.Signature, totpCode(t, enr.URL, time.Now()), "")
	if err != nil {
		t.Fatal(err)
	}
	blocked := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	err = s.db.UpdateUser(ctx, "bob", func(u *nmauth.User) error {
		state.Edit(&u.State, func(s *state.User) {
			s.PasswordClients = append(s.PasswordClients, state.Client{Client: "192.0.2.1", Failures: 9, BlockedUntil: blocked})
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	pages := list[adminUser](s, "users", 2)
	var names []string
	for i, p := range pages {
		if i < len(pages)-1 && len(p) != 2 {
			t.Errorf("page %d has %d users, want 2", i, len(p))
		}
		for _, u := range p {
			names = append(names, u.Name)
		}
	}
	want := slices.Clone(users)
	sort.Strings(want)
	if len(pages) != 3 || !slices.Equal(names, want) {
		t.Errorf("pages of 2: %d pages of %q, want 3 pages of %q", len(pages), names, want)
	}
	all := s.users()
	if c := all["carol"]; !c.TOTP || c.RecoveryCodesLeft != len(done.RecoveryCodes) || c.LockedUntil != nil {
		t.Errorf("carol: %+v, want TOTP on with %d recovery codes, not locked", c, len(done.RecoveryCodes))
	}
	if b := all["bob"]; b.TOTP || b.LockedUntil == nil || !b.LockedUntil.Equal(blocked) {
		t.Errorf("bob: %+v, want TOTP off and locked until %v", b, blocked)
	}
	if a := all["alice"]; a.Disabled || a.TOTP || a.RecoveryCodesLeft != 0 || a.LockedUntil != nil {
		t.Errorf("alice: %+v, want enabled, TOTP off, no backoff", a)
	}

	// No answer holds a password hash or the sealed secret.
	r := s.admin("GET", "/api/admin/users", testMasterKey)
	for _, name := range users {
		u, err := s.db.GetUser(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(r.body, []byte(u.PasswordHash)) {
			t.Errorf("the listing holds %s's password hash", name)
		}
	}
	if bytes.Contains(r.body, []byte("$argon2")) {
		t.Errorf("the listing holds a password hash: %s", r.body)
	}

	hostPages := list[adminHost](s, "hosts", 2)
	var ids []string
	for _, p := range hostPages {
		for _, h := range p {
			ids = append(ids, h.ID)
		}
	}
	if len(hostPages) != 2 || !slices.Equal(ids, []string{"host-a", "host-b", "host-c"}) {
		t.Errorf("host pages of 2: %d pages of %q", len(hostPages), ids)
	}
	// A page that ends exactly at the last account has no next.
	if p := list[adminHost](s, "hosts", 3); len(p) != 1 || len(p[0]) != 3 {
		t.Errorf("hosts 3 at a time: %d pages", len(p))
	}
}

// TestAdminAPIBadInput: a bad limit, a malformed name and an unknown account
// answer the error envelope and change nothing.
func TestAdminAPIBadInput(t *testing.T) {
	s := newAdminServer(t, []string{"alice"}, []string{"host-1"})
	_, token := s.login("alice", adminTestPassword)
	before := s.admin("GET", "/api/admin/users", testMasterKey).body
	cases := []struct {
		method, path string
		status       int
	}{
		{"GET", "/api/admin/users?limit=0", 400},
		{"GET", "/api/admin/users?limit=201", 400},
		{"GET", "/api/admin/users?limit=ten", 400},
		{"GET", "/api/admin/hosts?limit=-1", 400},
		{"GET", "/api/admin/hosts?after=" + strings.Repeat("a", 300), 400},
		{"POST", "/api/admin/users/nobody/disable", 404},
		{"POST", "/api/admin/users/nobody/totp-reset", 404},
		{"POST", "/api/admin/users/" + strings.Repeat("a", 65) + "/disable", 400},
		{"POST", "/api/admin/users/a%20b/disable", 400},
		{"POST", "/api/admin/hosts/no-such-host/disable", 404},
		{"POST", "/api/admin/hosts/a%20b/disable", 400},
	}
	for _, tc := range cases {
		r := s.admin(tc.method, tc.path, testMasterKey)
		if r.status != tc.status {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, r.status, r.body, tc.status)
			continue
		}
		wantError(t, r, tc.status)
	}
	if after := s.admin("GET", "/api/admin/users", testMasterKey).body; !bytes.Equal(before, after) {
		t.Errorf("the listing changed: %s, then %s", before, after)
	}
	if p := decode[principal](t, callURL(t, nmauth.WireSpec, "GET", s.url+"/api/whoami", token, nil), http.StatusOK); p.Name != "alice" {
		t.Errorf("alice's token after the bad requests: %+v", p)
	}
}

// TestAdminAPIDisableEnableReset: a disabled user cannot log in and loses
// their tokens; enabled again, they can; a TOTP reset lets them log in
// with the password alone. Hosts are disabled and enabled alike.
func TestAdminAPIDisableEnableReset(t *testing.T) {
	s := newAdminServer(t, []string{"alice", "bob"}, []string{"host-1"})
	ctx := context.Background()
	_, token := s.login("alice", adminTestPassword)

	decode[envelope[any]](t, s.admin("POST", "/api/admin/users/alice/disable", testMasterKey), http.StatusOK)
	if u := s.users(); !u["alice"].Disabled || u["bob"].Disabled {
		t.Errorf("after disabling alice: %+v", u)
	}
	if status, _ := s.login("alice", adminTestPassword); status != http.StatusUnauthorized {
		t.Errorf("login of the disabled user: %d, want 401", status)
	}
	if r := callURL(t, nmauth.WireSpec, "GET", s.url+"/api/whoami", token, nil); r.status != http.StatusUnauthorized {
		t.Errorf("the disabled user's earlier token: %d, want 401", r.status)
	}
	if status, _ := s.login("bob", adminTestPassword); status != http.StatusOK {
		t.Errorf("login of bob while alice is disabled: %d", status)
	}

	decode[envelope[any]](t, s.admin("POST", "/api/admin/users/alice/enable", testMasterKey), http.StatusOK)
	if s.users()["alice"].Disabled {
		t.Error("alice is still disabled after enable")
	}
	if status, _ := s.login("alice", adminTestPassword); status != http.StatusOK {
		t.Errorf("login after enable: %d, want 200", status)
	}

	master := nmauth.Principal{Kind: nmauth.KindMaster}
	enr, err := s.auth.InitTOTP(ctx, master, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.auth.CompleteTOTP(ctx, master, "alice", enr.URL, enr.Signature, totpCode(t, enr.URL, time.Now()), ""); err != nil {
		t.Fatal(err)
	}
	r := callURL(t, nmauth.WireSpec, "POST", s.url+"/api/users/adm/authenticate", "",
		map[string]string{"username": "alice", "password": adminTestPassword})
	if l := decode[envelope[userLogin]](t, r, http.StatusOK).Response; !l.TOTPRequired || l.AuthToken != "" {
		t.Fatalf("login with TOTP on: %+v, want the code prompt", l)
	}
	decode[envelope[any]](t, s.admin("POST", "/api/admin/users/alice/totp-reset", testMasterKey), http.StatusOK)
	if a := s.users()["alice"]; a.TOTP || a.RecoveryCodesLeft != 0 {
		t.Errorf("after the TOTP reset: %+v", a)
	}
	if status, tok := s.login("alice", adminTestPassword); status != http.StatusOK || tok == "" {
		t.Errorf("login after the TOTP reset: %d, token %t; want a token from the password alone", status, tok != "")
	}

	decode[envelope[any]](t, s.admin("POST", "/api/admin/hosts/host-1/disable", testMasterKey), http.StatusOK)
	hosts := list[adminHost](s, "hosts", maxAdminPage)
	if len(hosts) != 1 || len(hosts[0]) != 1 || !hosts[0][0].Disabled {
		t.Errorf("hosts after disable: %+v", hosts)
	}
	hostLoginStatus := func() int {
		return callURL(t, nmauth.WireSpec, "POST", s.url+"/api/hosts/adm/authenticate", "",
			map[string]string{"id": "host-1", "password": adminTestPassword}).status
	}
	if st := hostLoginStatus(); st != http.StatusUnauthorized {
		t.Errorf("login of the disabled host: %d, want 401", st)
	}
	decode[envelope[any]](t, s.admin("POST", "/api/admin/hosts/host-1/enable", testMasterKey), http.StatusOK)
	if st := hostLoginStatus(); st != http.StatusOK {
		t.Errorf("login of the enabled host: %d, want 200", st)
	}

	// Each change left its own audit event, naming the account and the
	// master key that made it.
	for _, w := range []struct {
		typ  nmauth.EventType
		kind nmauth.PrincipalKind
		name string
	}{
		{nmauth.EventUserDisabled, nmauth.KindUser, "alice"},
		{nmauth.EventUserEnabled, nmauth.KindUser, "alice"},
		{nmauth.EventTOTPReset, nmauth.KindUser, "alice"},
		{nmauth.EventHostDisabled, nmauth.KindHost, "host-1"},
		{nmauth.EventHostEnabled, nmauth.KindHost, "host-1"},
	} {
		got := s.audited(w.typ)
		if len(got) != 1 || got[0].Kind != w.kind || got[0].Name != w.name || got[0].ActorKind != nmauth.KindMaster {
			t.Errorf("%s events %+v, want one of %s %s by the master key", w.typ, got, w.kind, w.name)
		}
	}
}

// TestAdminAPINetmakerProfile: in the Netmaker profile the admin routes
// answer their changes and errors in Netmaker's envelope, as its other
// routes do, the 401 of the middleware included, and every exchange
// matches the Netmaker document.
func TestAdminAPINetmakerProfile(t *testing.T) {
	s := newAdminServerIn(t, nmauth.WireNetmaker, []string{"alice", "bob"}, nil)
	_, userToken := s.login("alice", adminTestPassword)
	if userToken == "" {
		t.Fatal("alice could not log in")
	}
	cases := []struct {
		method, path, bearer string
		status               int
	}{
		{"GET", "/api/admin/users", "", http.StatusUnauthorized},
		{"GET", "/api/admin/users", userToken, http.StatusForbidden},
		{"GET", "/api/admin/users?limit=0", testMasterKey, http.StatusBadRequest},
		{"POST", "/api/admin/users/nobody/disable", testMasterKey, http.StatusNotFound},
		{"POST", "/api/admin/users/bob/disable", testMasterKey, http.StatusOK},
	}
	for _, tc := range cases {
		r := s.admin(tc.method, tc.path, tc.bearer)
		if r.status != tc.status {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, r.status, r.body, tc.status)
			continue
		}
		var e map[string]any
		if err := json.Unmarshal(r.body, &e); err != nil {
			t.Fatalf("%s %s: %s is not JSON", tc.method, tc.path, r.body)
		}
		code, _ := e["Code"].(float64)
		msg, _ := e["Message"].(string)
		if int(code) != tc.status || msg == "" || len(e) != 3 {
			t.Errorf("%s %s: %s, want Netmaker's envelope with Code %d", tc.method, tc.path, r.body, tc.status)
		}
	}
	if u := s.users(); !u["bob"].Disabled || u["alice"].Disabled {
		t.Errorf("after disabling bob: %+v", u)
	}
}
