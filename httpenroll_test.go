package nmauth_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/nmauth/nmauth"
)

// netclientHost is the body netclient posts to the register route: its
// configuration, whose host fields are Netmaker's models.Host, and its
// private keys beside them.
func netclientHost(id, secret string) map[string]any {
	return map[string]any{
		"id": id, "hostpass": secret, "name": "edge-1", "version": "v1.4.0", "os": "linux",
		"macaddress":        base64.StdEncoding.EncodeToString([]byte{0x02, 0x42, 0xac, 0x11, 0x00, 0x02}),
		"publickey":         "x0Z1nT5J0sUlKn3Vn0d1Jx1vH6l5s9qk2fVhO8mJbXo=",
		"traffickeypublic":  base64.StdEncoding.EncodeToString([]byte("traffic-public")),
		"privatekey":        "wireguard-private-key-never-echoed",
		"traffickeyprivate": base64.StdEncoding.EncodeToString([]byte("traffic-private")),
		"interfaces":        []any{},
		"listenport":        51821,
	}
}

// newUUID draws a random (version 4) UUID, as netclient's host ids are.
func newUUID() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// serverConfig is what the test application's HostJoined hook answers.
var serverConfig = map[string]any{"Server": "nm.example.com", "Broker": "mqtts://broker.example.com"}

func withJoinHook(joined *[]string) func(*nmauth.Config) {
	return func(c *nmauth.Config) {
		c.HostJoined = func(_ context.Context, id string, k nmauth.EnrollmentKey, host []byte) (any, error) {
			*joined = append(*joined, id+" "+strings.Join(k.Networks, ",")+" "+string(host))
			return serverConfig, nil
		}
	}
}

// TestNetmakerEnrollmentRoutes drives the Netmaker profile's routes as
// nmctl and netclient send them: a key made with the master key answers
// Netmaker's record with a token; the listing names the key by its id and
// shows no token; a host registers with the token and netclient's body,
// gets the application's server config and itself back without its
// secrets, and logs in with the secret it chose; the same id again is
// refused; a deleted key admits no one.
func TestNetmakerEnrollmentRoutes(t *testing.T) {
	var joined []string
	f := newFixture(t, withWire(nmauth.WireNetmaker), withJoinHook(&joined))
	r := f.request(http.MethodPost, "/api/v1/enrollment-keys", testMasterKey,
		map[string]any{"tags": []string{"ci-key"}, "uses_remaining": 2, "networks": []string{"net-1"}, "expiration": 0, "unlimited": false})
	if r.status != http.StatusOK {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var made struct {
		Value, Token  string
		UsesRemaining int `json:"uses_remaining"`
		Type          int
	}
	if err := json.Unmarshal(r.body, &made); err != nil || made.Value == "" || made.UsesRemaining != 2 || made.Type != 2 {
		t.Fatalf("create answered %s (%v)", r.body, err)
	}
	raw, err := base64.StdEncoding.DecodeString(made.Token)
	var tok struct{ Server, Value string }
	if err != nil || json.Unmarshal(raw, &tok) != nil || !strings.HasPrefix(tok.Value, "nmauth_ek_"+made.Value+"_") || tok.Server == "" {
		t.Fatalf("token %q decodes to %s (%v)", made.Token, raw, err)
	}
	if r := f.request(http.MethodGet, "/api/v1/enrollment-keys", testMasterKey, nil); r.status != http.StatusOK ||
		!strings.Contains(string(r.body), `"value":"`+made.Value+`"`) || strings.Contains(string(r.body), "nmauth_ek_") || strings.Contains(string(r.body), `"token"`) {
		t.Fatalf("list: %d %s", r.status, r.body)
	}

	id, secret := newUUID(), hostSecret(t)
	r = f.do("/api/v1/host/register/"+made.Token, "", netclientHost(id, secret))
	if r.status != http.StatusOK {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	var answer struct {
		ServerConfig  map[string]any `json:"server_config"`
		RequestedHost map[string]any `json:"requested_host"`
	}
	if err := json.Unmarshal(r.body, &answer); err != nil || answer.ServerConfig["Server"] != "nm.example.com" ||
		answer.RequestedHost["id"] != id || answer.RequestedHost["name"] != "edge-1" {
		t.Fatalf("register answered %s (%v)", r.body, err)
	}
	for _, secretField := range []string{"hostpass", "privatekey", "traffickeyprivate"} {
		if _, ok := answer.RequestedHost[secretField]; ok || strings.Contains(joined[0], secretField) {
			t.Errorf("%s was answered or passed to HostJoined: %s / %s", secretField, r.body, joined[0])
		}
	}
	if !strings.HasPrefix(joined[0], id+" net-1 ") {
		t.Errorf("HostJoined got %q, want the host and the key's networks", joined[0])
	}
	if r := f.do("/api/hosts/adm/authenticate", "", map[string]string{"id": id, "password": secret, "macaddress": "02:42:ac:11:00:02"}); r.status != http.StatusOK {
		t.Fatalf("the joined host's login: %d %s", r.status, r.body)
	}
	r = f.do("/api/v1/host/register/"+made.Token, "", netclientHost(id, hostSecret(t)))
	if code, msg := r.envelope(t); r.status != http.StatusBadRequest || code != 400 || msg != "host already exists" {
		t.Fatalf("register of a taken id: %d %s", r.status, r.body)
	}
	if r := f.do("/api/hosts/adm/authenticate", "", map[string]string{"id": id, "password": secret}); r.status != http.StatusOK {
		t.Fatalf("the taken host's own secret after a refused register: %d %s", r.status, r.body)
	}
	if r := f.request(http.MethodDelete, "/api/v1/enrollment-keys/"+made.Value, testMasterKey, nil); r.status != http.StatusOK || len(r.body) != 0 {
		t.Fatalf("delete: %d %q", r.status, r.body)
	}
	r = f.do("/api/v1/host/register/"+made.Token, "", netclientHost(newUUID(), hostSecret(t)))
	if _, msg := r.envelope(t); r.status != http.StatusBadRequest || msg != "invalid enrollment key" {
		t.Fatalf("register with a deleted key: %d %s", r.status, r.body)
	}
}

// TestRegisterRefusals: each bad register request is a 400 that says
// what is wrong, and none leaves a host or spends a use.
func TestRegisterRefusals(t *testing.T) {
	f := newFixture(t, withWire(nmauth.WireNetmaker))
	_, key, err := f.auth.Admin().CreateEnrollmentKey(context.Background(), nmauth.EnrollmentKey{Name: "k", Uses: 1})
	if err != nil {
		t.Fatal(err)
	}
	token := func(value string) string {
		b, _ := json.Marshal(map[string]string{"server": "nm.example.com", "value": value})
		return base64.StdEncoding.EncodeToString(b)
	}
	guessed := key[:len(key)-26] + strings.Repeat("A", 26)
	id := newUUID()
	withHost := func(change func(map[string]any)) map[string]any {
		h := netclientHost(id, hostSecret(t))
		change(h)
		return h
	}
	for _, tc := range []struct {
		name, token string
		body        any
		msg         string
	}{
		{"token not base64", "not*base64", netclientHost(id, hostSecret(t)), "malformed enrollment token: not standard base64"},
		{"token not JSON", base64.StdEncoding.EncodeToString([]byte("nope")), netclientHost(id, hostSecret(t)), `malformed enrollment token: not the base64 of {"server": …, "value": …}`},
		{"guessed key", token(guessed), netclientHost(id, hostSecret(t)), "invalid enrollment key"},
		{"weak hostpass", token(key), withHost(func(h map[string]any) { h["hostpass"] = "password1234" }), "the host's password must be a secret drawn at random, of 128 bits or more (as netclient draws)"},
		{"no hostpass", token(key), withHost(func(h map[string]any) { delete(h, "hostpass") }), `"hostpass" is missing or empty in the JSON body; it is required`},
		{"id not a UUID", token(key), withHost(func(h map[string]any) { h["id"] = "host-1" }), "invalid host id or MAC address"},
		{"bad MAC", token(key), withHost(func(h map[string]any) { h["macaddress"] = "AAEC" }), "macaddress must be the base64 of a MAC address"},
		{"body not an object", token(key), []string{"host"}, "the body must be a JSON object: the joining host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do("/api/v1/host/register/"+tc.token, "", tc.body)
			if _, msg := r.envelope(t); r.status != http.StatusBadRequest || msg != tc.msg {
				t.Fatalf("%d %s, want 400 %q", r.status, r.body, tc.msg)
			}
		})
	}
	list, _ := f.auth.Admin().EnrollmentKeys(context.Background())
	hosts, _ := f.auth.Admin().ListHosts(context.Background(), "", 10)
	if len(list) != 1 || list[0].Used != 0 || len(hosts) != 0 {
		t.Fatalf("refused registers wrote: keys %+v, hosts %+v", list, hosts)
	}
}

// TestRegisterLimited: the register route counts every attempt against
// the client's budget, as a failed login does: past it, 429.
func TestRegisterLimited(t *testing.T) {
	f := newFixture(t, withWire(nmauth.WireNetmaker), func(c *nmauth.Config) { c.ClientRate, c.ClientBurst = 0.001, 3 })
	var last reply
	for range 4 {
		last = f.do("/api/v1/host/register/bm9wZQ==", "", netclientHost(newUUID(), hostSecret(t)))
	}
	if last.status != http.StatusTooManyRequests || last.header.Get("Retry-After") == "" {
		t.Fatalf("the 4th register past a burst of 3: %d %s", last.status, last.body)
	}
}

// TestSpecEnrollmentRoutes drives the spec profile's routes: the master
// key creates, lists, revokes and deletes a key; a user is refused unless
// IsAdmin names it; a host joins with the key in the body.
func TestSpecEnrollmentRoutes(t *testing.T) {
	var joined []string
	f := newFixture(t, withJoinHook(&joined), func(c *nmauth.Config) {
		c.IsAdmin = func(_ context.Context, user string) (bool, error) { return user == "root", nil }
	})
	f.addUser("alice", "alice-password")
	f.addUser("root", "root-password")
	alice := f.do("/api/users/adm/authenticate", "", map[string]string{"username": "alice", "password": "alice-password"}).field(t, "authToken").(string)
	root := f.do("/api/users/adm/authenticate", "", map[string]string{"username": "root", "password": "root-password"}).field(t, "authToken").(string)
	body := map[string]any{"name": "ci", "uses": 1, "networks": []string{"net-1"}}
	if r := f.do("/api/enrollment-keys", alice, body); r.status != http.StatusForbidden {
		t.Fatalf("create by a user who is no admin: %d %s", r.status, r.body)
	}
	r := f.do("/api/enrollment-keys", root, body)
	if r.status != http.StatusOK {
		t.Fatalf("create by an admin: %d %s", r.status, r.body)
	}
	resp := r.response(t)
	keyID, key := resp["id"].(string), resp["key"].(string)
	if !strings.HasPrefix(key, "nmauth_ek_"+keyID+"_") {
		t.Fatalf("create answered %s", r.body)
	}
	secret := hostSecret(t)
	r = f.do("/api/hosts/join", "", map[string]any{"key": key, "id": "host-1", "password": secret, "macaddress": "02:42:ac:11:00:02", "name": "edge"})
	if r.status != http.StatusOK || r.response(t)["serverConfig"] == nil {
		t.Fatalf("join: %d %s", r.status, r.body)
	}
	if r := f.do("/api/hosts/adm/authenticate", "", map[string]string{"id": "host-1", "password": secret}); r.status != http.StatusOK {
		t.Fatalf("the joined host's login: %d %s", r.status, r.body)
	}
	if r := f.do("/api/hosts/join", "", map[string]any{"key": key, "id": "host-2", "password": hostSecret(t)}); r.status != http.StatusBadRequest {
		t.Fatalf("a second join with a key of one use: %d %s", r.status, r.body)
	}
	if r := f.do("/api/enrollment-keys/"+keyID+"/revoke", testMasterKey, nil); r.status != http.StatusOK {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	r = f.request(http.MethodGet, "/api/enrollment-keys", testMasterKey, nil)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"revokedAt"`) || strings.Contains(string(r.body), "nmauth_ek_") {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	if r := f.request(http.MethodDelete, "/api/enrollment-keys/"+keyID, testMasterKey, nil); r.status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if r := f.request(http.MethodDelete, "/api/enrollment-keys/"+keyID, testMasterKey, nil); r.status != http.StatusNotFound {
		t.Fatalf("delete again: %d %s", r.status, r.body)
	}
}
