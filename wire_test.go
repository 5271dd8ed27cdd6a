package nmauth_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

// memberOf is a Config.NodeMember that admits the first test host to
// "net-1" only.
func memberOf(c *nmauth.Config) {
	c.NodeMember = func(_ context.Context, network, hostID string) (bool, error) {
		return network == "net-1" && hostID == testHostIDs[0], nil
	}
}

// keysOf returns the sorted keys of a JSON object, or of the object under
// path (a list of keys), and fails if there is none.
func keysOf(t *testing.T, body []byte, path ...string) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	for _, k := range path {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("no object at %v in %s", path, body)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestWireBytes walks every answer in both profiles and checks the exact
// keys a client reads: the spec's in the spec profile, those of Netmaker's
// server in the Netmaker profile.
func TestWireBytes(t *testing.T) {
	type want struct{ top, inner []string }
	table := map[nmauth.WireProfile]map[string]want{
		nmauth.WireSpec: {
			"host login":      {[]string{"code", "message", "response"}, []string{"authToken", "id"}},
			"node login":      {[]string{"code", "message", "response"}, []string{"authToken", "id", "network"}},
			"user login":      {[]string{"code", "message", "response"}, []string{"authToken", "userName"}},
			"init-totp":       {[]string{"otp_auth_url", "otp_auth_url_signature", "qr_code"}, nil},
			"complete-totp":   {[]string{"code", "message", "response"}, []string{"authToken", "recoveryCodes"}},
			"login with TOTP": {[]string{"code", "message", "response"}, []string{"preAuthToken", "totpRequired", "userName"}},
			"verify-totp":     {[]string{"authToken", "userName"}, nil},
			"error":           {[]string{"code", "message"}, nil},
		},
		nmauth.WireNetmaker: {
			"host login":      {[]string{"Code", "Message", "Response"}, []string{"AuthToken", "ID"}},
			"node login":      {[]string{"Code", "Message", "Response"}, []string{"AuthToken", "ID"}},
			"user login":      {[]string{"Code", "Message", "Response"}, []string{"AuthToken", "UserName"}},
			"init-totp":       {[]string{"Code", "Message", "Response"}, []string{"otp_auth_url", "otp_auth_url_signature", "qr_code"}},
			"complete-totp":   {[]string{"Code", "Message", "Response"}, []string{"authToken", "recoveryCodes"}},
			"login with TOTP": {[]string{"Code", "Message", "Response"}, []string{"pre_auth_token", "user_name"}},
			"verify-totp":     {[]string{"Code", "Message", "Response"}, []string{"AuthToken", "UserName"}},
			"error":           {[]string{"Code", "Message", "Response"}, nil},
		},
	}
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w), memberOf)
		f.addUser("alice", "correct horse battery")
		f.addHost(testHostIDs[0], "", "host-password-1")
		host := map[string]string{"id": testHostIDs[0], "password": "host-password-1"}
		replies := map[string]reply{
			"host login": f.do("/api/hosts/adm/authenticate", "", host),
			"node login": f.do("/api/nodes/net-1/authenticate", "", host),
			"user login": f.loginUser("alice", "correct horse battery"),
		}
		tok := f.userToken("alice", "correct horse battery")
		replies["init-totp"] = f.do("/api/users/alice/auth/init-totp", tok, nil)
		e := f.initTOTP("alice", tok)
		replies["complete-totp"] = f.do("/api/users/alice/auth/complete-totp", tok, map[string]string{
			"otp_auth_url": e.url, "otp_auth_url_signature": e.signature, "totp": f.code(e.secret, 0),
		})
		replies["login with TOTP"] = f.loginUser("alice", "correct horse battery")
		pre := f.preAuthToken("alice", "correct horse battery")
		f.clock.Advance(30 * time.Second)
		replies["verify-totp"] = f.verifyTOTP("alice", pre, f.code(e.secret, 0))
		replies["error"] = f.loginUser("alice", "wrong password here")

		for name, wt := range table[w] {
			r := replies[name]
			if got := keysOf(t, r.body); !slices.Equal(got, wt.top) {
				t.Errorf("%s: keys %v, want %v; body %s", name, got, wt.top, r.body)
			}
			if wt.inner == nil {
				continue
			}
			if got := keysOf(t, r.body, r.key("response")); !slices.Equal(got, wt.inner) {
				t.Errorf("%s: response keys %v, want %v; body %s", name, got, wt.inner, r.body)
			}
		}
		// A login that needs TOTP says so, in Netmaker's words in its
		// profile.
		wantMessage := map[nmauth.WireProfile]string{
			nmauth.WireSpec:     "TOTP required: send a code to verify-totp with the pre-auth token",
			nmauth.WireNetmaker: "W1R3: TOTP required",
		}[w]
		if _, msg := replies["login with TOTP"].envelope(t); msg != wantMessage {
			t.Errorf("login with TOTP: message %q, want %q", msg, wantMessage)
		}
		if w == nmauth.WireNetmaker && !strings.HasSuffix(string(replies["error"].body), `"Response":null}`+"\n") {
			t.Errorf("Netmaker error body %s", replies["error"].body)
		}
	})
}

func TestNodeLogin(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w), memberOf)
		f.addHost(testHostIDs[0], "aa:bb:cc:dd:ee:01", "host-password-1")
		f.addHost(testHostIDs[1], "", "host-password-2")
		unknown := http.StatusUnauthorized
		if w == nmauth.WireNetmaker {
			unknown = http.StatusBadRequest
		}
		tests := []struct {
			name, path, id, password string
			status                   int
		}{
			{"member", "/api/nodes/net-1/authenticate", testHostIDs[0], "host-password-1", 200},
			{"other network", "/api/nodes/net-2/authenticate", testHostIDs[0], "host-password-1", 403},
			{"not a member", "/api/nodes/net-1/authenticate", testHostIDs[1], "host-password-2", 403},
			{"wrong password", "/api/nodes/net-1/authenticate", testHostIDs[0], "wrong-password", 401},
			{"wrong password, not a member", "/api/nodes/net-1/authenticate", testHostIDs[1], "wrong-password", 401},
			{"unknown host", "/api/nodes/net-1/authenticate", testHostIDs[2], "host-password-1", unknown},
		}
		if w == nmauth.WireNetmaker {
			tests = append(tests, struct {
				name, path, id, password string
				status                   int
			}{"legacy route", "/api/nodes/adm/net-1/authenticate", testHostIDs[0], "host-password-1", 200})
		} else {
			tests = append(tests, struct {
				name, path, id, password string
				status                   int
			}{"legacy route is Netmaker's only", "/api/nodes/adm/net-1/authenticate", testHostIDs[0], "host-password-1", 404})
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				r := f.do(tc.path, "", map[string]string{"id": tc.id, "password": tc.password, "macaddress": "aa:bb:cc:dd:ee:01"})
				if tc.status != 200 {
					wantError(t, r, tc.status)
					return
				}
				wantStatus(t, r, 200)
				p, err := f.auth.CheckBearer(context.Background(), r.field(t, "authToken").(string))
				if err != nil || p.Kind != nmauth.KindNode || p.Name != tc.id || p.Network != "net-1" || r.field(t, "id") != tc.id {
					t.Fatalf("node token checks as %+v, %v; body %s", p, err, r.body)
				}
			})
		}
	})
}

// TestNodeLoginIsLimited checks that node login counts against the
// per-client attempt limit as the other login routes do.
func TestNodeLoginIsLimited(t *testing.T) {
	f := newFixture(t, memberOf, func(c *nmauth.Config) { c.ClientRate, c.ClientBurst = 0.001, 2 })
	f.addHost(testHostIDs[0], "", "host-password-1")
	// Wrong passwords spend the burst (a right one gives its attempt
	// back); then the right one waits too.
	wrong := map[string]string{"id": testHostIDs[0], "password": "not-the-password"}
	wantError(t, f.do("/api/nodes/net-1/authenticate", "", wrong), 401)
	wantError(t, f.do("/api/nodes/net-1/authenticate", "", wrong), 401)
	body := map[string]string{"id": testHostIDs[0], "password": "host-password-1"}
	r := f.do("/api/nodes/net-1/authenticate", "", body)
	wantError(t, r, http.StatusTooManyRequests)
	if r.header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
}

func TestParseWireProfile(t *testing.T) {
	for _, w := range []nmauth.WireProfile{nmauth.WireSpec, nmauth.WireNetmaker} {
		if got, err := nmauth.ParseWireProfile(w.String()); got != w || err != nil {
			t.Errorf("ParseWireProfile(%q) = %v, %v", w, got, err)
		}
	}
	if _, err := nmauth.ParseWireProfile("Netmaker"); err == nil {
		t.Error("ParseWireProfile accepted a name in the wrong case")
	}
	if _, err := nmauth.New(nmauth.Config{Store: nmauth.NewMemoryStore(), Secrets: [][]byte{testSecret(1)}, Wire: 7}); err == nil {
		t.Error("New accepted an unknown wire profile")
	}
}
