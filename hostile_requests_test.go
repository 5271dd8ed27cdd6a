package nmauth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/internal/state"
)

const (
	attackPassword = "correct horse battery"
	hostPassword   = "host-password-1"

	// Names that PRECIS maps to "alice", and one that only looks like it.
	aliceUpper     = "ALICE"
	aliceFullwidth = "ａｌｉｃｅ"      // U+FF41 ...: width-mapped to ASCII
	aliceCyrillic  = "\u0430lice" // CYRILLIC SMALL LETTER A: another name
)

// scene is the state every hostile request starts from: three users, two
// hosts, and one credential of every kind.
type scene struct {
	*fixture
	// watched is the fixture's store, watched so that it can be
	// snapshotted and restored between hostile requests.
	watched *watchedStore
	fg      *forger
	secret  string // carol's TOTP secret

	alice, bob           string // user tokens, no TOTP
	carolPlain           string // carol's user token from before she turned TOTP on, revoked by it
	carolTOTP            string // carol's user token from a login that passed TOTP
	pre                  string // carol's live pre-auth token
	preSpent             string // carol's pre-auth token already redeemed
	spentCode            string // the code redeemed with preSpent
	host, hostNamedAlice string
	node, nodeNamedAlice string

	expired, foreignIssuer, foreignKey string // real user tokens for alice

	carolEnrollment enrollment // the enrollment that turned carol's TOTP on
	bobEnrollment   enrollment // an enrollment made for bob by the master key

	baseline storeState
}

func newScene(t *testing.T) *scene {
	t.Helper()
	s := &scene{fg: newForger(t, testSecret(1))}
	s.fixture = newFixture(t, func(c *nmauth.Config) {
		s.watched = &watchedStore{Store: c.Store}
		c.Store = s.watched
	})
	s.fg.gen = func(aud, sub string) uint64 {
		if aud == audHost {
			h, _ := s.store.GetHost(context.Background(), sub)
			return nmauth.StateOf(&h.State).Generation
		}
		u, _ := s.store.GetUser(context.Background(), sub)
		return nmauth.StateOf(&u.State).Generation
	}
	for _, name := range []string{"alice", "bob", "carol"} {
		s.addUser(name, attackPassword)
	}
	s.addHost("host-1", "AA:BB:CC:DD:EE:01", hostPassword)
	s.addHost("alice", "", hostPassword)
	s.alice = s.userToken("alice", attackPassword)
	s.bob = s.userToken("bob", attackPassword)
	s.carolPlain = s.userToken("carol", attackPassword)

	s.carolEnrollment = s.initTOTP("carol", s.carolPlain)
	s.secret = s.carolEnrollment.secret
	wantStatus(t, s.do("/api/users/carol/auth/complete-totp", s.carolPlain, map[string]string{
		"otp_auth_url": s.carolEnrollment.url, "otp_auth_url_signature": s.carolEnrollment.signature,
		"totp": s.code(s.secret, 0),
	}), http.StatusOK)
	s.clock.Advance(30 * time.Second)
	s.preSpent = s.preAuthToken("carol", attackPassword)
	s.spentCode = s.code(s.secret, 0)
	r := s.verifyTOTP("carol", s.preSpent, s.spentCode)
	wantStatus(t, r, http.StatusOK)
	s.carolTOTP = r.json(t)["authToken"].(string)
	s.pre = s.preAuthToken("carol", attackPassword)
	s.bobEnrollment = s.initTOTP("bob", testMasterKey)

	s.host = s.hostToken("host-1")
	s.hostNamedAlice = s.hostToken("alice")
	var err error
	if s.node, err = s.auth.IssueNodeToken(t.Context(), "net-1", "node-1"); err != nil {
		t.Fatal(err)
	}
	if s.nodeNamedAlice, err = s.auth.IssueNodeToken(t.Context(), "net-1", "alice"); err != nil {
		t.Fatal(err)
	}

	// Real tokens from Authenticators that differ in one way each.
	now := s.clock.Now()
	s.expired = s.otherToken(nmauth.Config{Now: func() time.Time { return now.Add(-2 * time.Hour) }})
	s.foreignIssuer = s.otherToken(nmauth.Config{Issuer: "other-issuer"})
	s.foreignKey = s.otherToken(nmauth.Config{Secrets: [][]byte{testSecret(9)}})

	s.baseline = s.watched.snapshot(t)
	s.checkForger(t)
	s.watched.restore(t, s.baseline)
	if got := s.watched.snapshot(t); !reflect.DeepEqual(got, s.baseline) {
		t.Fatalf("restore does not restore:%s", diffState(s.baseline, got))
	}
	return s
}

func (s *scene) hostToken(id string) string {
	s.t.Helper()
	r := s.do("/api/hosts/adm/authenticate", "", map[string]string{"id": id, "password": hostPassword})
	wantStatus(s.t, r, http.StatusOK)
	return r.response(s.t)["authToken"].(string)
}

// otherToken logs alice in through another Authenticator over the same
// store, built from cfg with the scene's defaults for what cfg leaves out.
func (s *scene) otherToken(cfg nmauth.Config) string {
	s.t.Helper()
	cfg.Store = s.store
	if cfg.Secrets == nil {
		cfg.Secrets = [][]byte{testSecret(1)}
	}
	if cfg.Now == nil {
		cfg.Now = s.clock.Now
	}
	a, err := nmauth.New(cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	out, err := a.LoginUser(context.Background(), "alice", attackPassword)
	if err != nil {
		s.t.Fatal(err)
	}
	return out.AuthToken
}

// checkForger is the positive control of the forged tokens: well-formed
// ones of every kind are accepted, so each forgery below is refused for
// its one defect.
func (s *scene) checkForger(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	now := s.clock.Now()
	wantStatus(t, s.do("/api/users/alice/auth/init-totp", s.fg.sign(t, audUser, s.fg.claims(audUser, "alice", now, time.Hour)), nil), http.StatusOK)
	for _, aud := range []string{audHost, audNode} {
		c := s.fg.claims(aud, "host-1", now, 15*time.Minute)
		c["net"] = "net-1"
		if _, err := s.auth.CheckBearer(ctx, s.fg.sign(t, aud, c)); err != nil {
			t.Fatalf("forged %s token refused: %v", aud, err)
		}
	}
	pre := s.fg.claims(audPreAuth, "carol", now, 5*time.Minute)
	pre["jti"] = state.Of(s.baseline.Users["carol"].State).PreAuthID
	_, err := s.auth.VerifyTOTP(ctx, s.fg.sign(t, audPreAuth, pre), "carol", s.wrongCode())
	if !errors.Is(err, nmauth.ErrInvalidCode) {
		t.Fatalf("forged pre-auth token with the live id: %v, want the code judged wrong", err)
	}
}

// wrongCode is a six-digit code that carol's authenticator does not show
// now, nor one step before or after.
func (s *scene) wrongCode() string {
	next := 123456
	return s.fixture.wrongCode(s.secret, &next)
}

// forge returns a token for alice of the user kind, signed as the library
// signs, after edit changed its claims.
func (s *scene) forge(edit func(jwt.MapClaims)) string {
	s.t.Helper()
	c := s.fg.claims(audUser, "alice", s.clock.Now(), time.Hour)
	edit(c)
	return s.fg.sign(s.t, audUser, c)
}

// hostileCase is one request and what it may do.
type hostileCase struct {
	name string
	req  hostileRequest
	// status is the one answer expected, always 4xx.
	status int
	// setup changes the baseline before the request, for cases that need
	// an account in backoff.
	setup func(*storeState)
	// change is the only change the request may make to the store: a
	// failure counted. Nil means none.
	change func(*storeState)
}

const (
	loginPath = "/api/users/adm/authenticate"
	hostPath  = "/api/hosts/adm/authenticate"
)

func initPath(user string) string     { return "/api/users/" + user + "/auth/init-totp" }
func completePath(user string) string { return "/api/users/" + user + "/auth/complete-totp" }
func verifyPath(user string) string   { return "/api/users/" + user + "/auth/verify-totp" }

// jsonBody encodes fields as a JSON object; values go in as Go strings,
// so use a raw body for bytes JSON cannot carry.
func jsonBody(kv ...string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%s", strconv.Quote(kv[i]), jsonString(kv[i+1]))
	}
	b.WriteByte('}')
	return b.String()
}

// jsonString quotes s for JSON, escaping control characters as \u00XX.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Expected store changes.

// attackClient is the address the hostile requests come from, as the
// attempt counters name it.
const attackClient = "127.0.0.1"

// clientFailed counts one failure from attackClient in a record's
// per-client list.
func clientFailed(clients []state.Client) []state.Client {
	out := slices.Clone(clients)
	for i := range out {
		if out[i].Client == attackClient {
			out[i].Failures++
			return out
		}
	}
	return append(out, state.Client{Client: attackClient, Failures: 1})
}

func passwordFailed(name string) func(*storeState) {
	return func(s *storeState) {
		s.user(name, func(u *nmauth.User) {
			nmauth.StateOf(&u.State).PasswordFailures++
			nmauth.StateOf(&u.State).PasswordClients = clientFailed(nmauth.StateOf(&u.State).PasswordClients)
		})
	}
}

func hostPasswordFailed(id string) func(*storeState) {
	return func(s *storeState) {
		s.host(id, func(h *nmauth.Host) {
			nmauth.StateOf(&h.State).PasswordFailures++
			nmauth.StateOf(&h.State).PasswordClients = clientFailed(nmauth.StateOf(&h.State).PasswordClients)
		})
	}
}

// clientBlocked puts attackClient in backoff after n failures until the
// given time.
func clientBlocked(n int, until time.Time) []state.Client {
	return []state.Client{{Client: attackClient, Failures: n, BlockedUntil: until, Known: true}}
}

func codeFailed(name string) func(*storeState) {
	return func(s *storeState) {
		s.user(name, func(u *nmauth.User) {
			nmauth.StateOf(&u.State).TOTPFailures++
			nmauth.StateOf(&u.State).PreAuthFailures++
		})
	}
}

// userBlocked puts a user in password or TOTP backoff after n failures,
// until the given time.
func userBlocked(name string, n int, until time.Time, totp bool) func(*storeState) {
	return func(s *storeState) {
		s.user(name, func(u *nmauth.User) {
			if totp {
				nmauth.StateOf(&u.State).TOTPFailures, nmauth.StateOf(&u.State).TOTPBlockedUntil = n, until
			} else {
				nmauth.StateOf(&u.State).PasswordFailures, nmauth.StateOf(&u.State).PasswordClients = n, clientBlocked(n, until)
			}
		})
	}
}

func (s *scene) cases(t *testing.T) []hostileCase {
	now := s.clock.Now()
	goodCode := s.code(s.secret, 30*time.Second) // valid and never used
	wrong := s.wrongCode()
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	huge := strings.Repeat("a", 60000)
	tooBig := `{"username":"` + strings.Repeat("a", (64<<10)+1) + `"}`

	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	userClaims := s.fg.claims(audUser, "alice", now, time.Hour)
	header := map[string]any{"kid": s.fg.kid}
	good := s.fg.sign(t, audUser, userClaims)
	attackerKey := []byte("attacker-chosen-hmac-key-0123456789")
	parts := strings.Split(good, ".")

	forgedPre := func(edit func(jwt.MapClaims)) string {
		c := s.fg.claims(audPreAuth, "carol", now, 5*time.Minute)
		c["jti"] = state.Of(s.baseline.Users["carol"].State).PreAuthID
		edit(c)
		return s.fg.sign(t, audPreAuth, c)
	}
	atInit := func(auth []string) hostileRequest { return hostileRequest{path: initPath("alice"), auth: auth} }
	verify := func(path, token, code string) hostileRequest {
		return hostileRequest{path: path, auth: bearer(token), body: jsonBody("totp", code)}
	}
	complete := func(user, token string, e enrollment, code string) hostileRequest {
		return hostileRequest{path: completePath(user), auth: bearer(token), body: jsonBody(
			"otp_auth_url", e.url, "otp_auth_url_signature", e.signature, "totp", code)}
	}
	login := func(body string) hostileRequest { return hostileRequest{path: loginPath, body: body} }
	hostLogin := func(body string) hostileRequest { return hostileRequest{path: hostPath, body: body} }

	return []hostileCase{
		// User login: bodies.
		{name: "login without content type", req: hostileRequest{path: loginPath, ctype: noType, body: jsonBody("username", "alice", "password", attackPassword)}, status: 415},
		{name: "login as text/plain", req: hostileRequest{path: loginPath, ctype: "text/plain", body: jsonBody("username", "alice", "password", attackPassword)}, status: 415},
		{name: "login as a form", req: hostileRequest{path: loginPath, ctype: "application/x-www-form-urlencoded", body: "username=alice&password=x"}, status: 415},
		{name: "login with a malformed content type", req: hostileRequest{path: loginPath, ctype: "application/json;;", body: jsonBody("username", "alice")}, status: 415},
		{name: "login body over 64 KiB", req: login(tooBig), status: 413},
		{name: "login body of 8 MiB streamed", req: hostileRequest{path: loginPath, body: `{"username":"`, stream: 8 << 20}, status: 413},
		{name: "login empty body", req: login(""), status: 400},
		{name: "login truncated JSON", req: login(`{"username":"alice","password":`), status: 400},
		{name: "login two JSON values", req: login(jsonBody("username", "alice") + jsonBody("username", "bob")), status: 400},
		{name: "login body is an array", req: login(`["alice","` + attackPassword + `"]`), status: 400},
		{name: "login username is a number", req: login(`{"username":1,"password":"x"}`), status: 400},
		{name: "login username is an operator object", req: login(`{"username":{"$ne":null},"password":{"$ne":null}}`), status: 400},
		{name: "login nested 20000 deep", req: login(`{"username":"alice","x":` + deep + `}`), status: 400},
		{name: "login with a byte order mark", req: login("\uFEFF" + jsonBody("username", "alice", "password", attackPassword)), status: 400},
		{name: "login raw NUL byte in a string", req: login("{\"username\":\"ali\x00ce\",\"password\":\"x\"}"), status: 400},
		{name: "login null fields", req: login(`{"username":null,"password":null}`), status: 400},
		{name: "login username of 60000 bytes", req: login(jsonBody("username", huge, "password", attackPassword)), status: 401},
		{name: "login password of 60000 bytes counts for alice", req: login(jsonBody("username", "alice", "password", huge)), status: 401, change: passwordFailed("alice")},
		{name: "login escaped NUL in the username", req: login(jsonBody("username", "alice\x00", "password", attackPassword)), status: 401},
		{name: "login escaped NUL in the password", req: login(jsonBody("username", "alice", "password", attackPassword+"\x00")), status: 401},
		{name: "login invalid UTF-8 in the username", req: login("{\"username\":\"alic\xff\",\"password\":\"" + attackPassword + "\"}"), status: 401},
		{name: "login invalid UTF-8 in the password counts for alice", req: login("{\"username\":\"alice\",\"password\":\"correct horse \xff\"}"), status: 401, change: passwordFailed("alice")},
		{name: "login as Cyrillic look-alike of alice", req: login(jsonBody("username", aliceCyrillic, "password", attackPassword)), status: 401},
		{name: "login fullwidth alice, wrong password, counts for alice", req: login(jsonBody("username", aliceFullwidth, "password", "wrong password")), status: 401, change: passwordFailed("alice")},
		{name: "login ALICE, wrong password, counts for alice", req: login(jsonBody("username", aliceUpper, "password", "wrong password")), status: 401, change: passwordFailed("alice")},
		{name: "login duplicate keys", req: login(`{"username":"bob","password":"wrong password","username":"alice"}`), status: 400},
		{name: "login decoy password first", req: login(`{"username":"alice","password":"decoy password","password":"` + attackPassword + `"}`), status: 400},
		{name: "login password in two cases", req: login(`{"username":"alice","Password":"decoy password","password":"` + attackPassword + `"}`), status: 400},
		{name: "login username with a long s", req: login(`{"username":"alice","uſername":"bob","password":"` + attackPassword + `"}`), status: 400},
		{name: "login unknown extra fields are fine", req: login(`{"username":"alice","password":"wrong password","client":"x","Client":"y"}`), status: 401, change: passwordFailed("alice")},
		{name: "login PASSWORD alone is not password", req: login(`{"username":"alice","PASSWORD":"wrong password"}`), status: 400},
		{name: "login right password during backoff", req: login(jsonBody("username", "alice", "password", attackPassword)), status: 429,
			setup: userBlocked("alice", 5, now.Add(time.Second), false)},
		{name: "login GET", req: hostileRequest{method: http.MethodGet, path: loginPath}, status: 405},

		// Host login.
		{name: "host id is a boolean", req: hostLogin(`{"id":true,"password":"x"}`), status: 400},
		{name: "host macaddress is a number", req: hostLogin(`{"id":"host-1","macaddress":42,"password":"x"}`), status: 400},
		{name: "host malformed MAC", req: hostLogin(jsonBody("id", "host-1", "macaddress", "aa:bb:cc:dd:ee", "password", hostPassword)), status: 400},
		{name: "host MAC with NUL", req: hostLogin(jsonBody("id", "host-1", "macaddress", "aa:bb:cc:dd:ee:01\x00", "password", hostPassword)), status: 400},
		{name: "host id with NUL", req: hostLogin(jsonBody("id", "host-1\x00", "password", hostPassword)), status: 401},
		{name: "host id of 60000 bytes", req: hostLogin(jsonBody("id", huge, "password", hostPassword)), status: 401},
		{name: "host id in another case", req: hostLogin(jsonBody("id", "HOST-1", "password", hostPassword)), status: 401},
		{name: "host another MAC with a wrong password counts", req: hostLogin(jsonBody("id", "host-1", "macaddress", "aa:bb:cc:dd:ee:02", "password", "wrong password")), status: 401, change: hostPasswordFailed("host-1")},
		{name: "host wrong password counts", req: hostLogin(jsonBody("id", "host-1", "password", "wrong password")), status: 401, change: hostPasswordFailed("host-1")},
		{name: "host right password during backoff", req: hostLogin(jsonBody("id", "host-1", "password", hostPassword)), status: 429,
			setup: func(st *storeState) {
				st.host("host-1", func(h *nmauth.Host) {
					nmauth.StateOf(&h.State).PasswordFailures, nmauth.StateOf(&h.State).PasswordClients = 6, clientBlocked(6, now.Add(2*time.Second))
				})
			}},
		{name: "host body over 64 KiB", req: hostLogin(tooBig), status: 413},
		{name: "host without content type", req: hostileRequest{path: hostPath, ctype: noType, body: jsonBody("id", "host-1", "password", hostPassword)}, status: 415},

		// The bearer parser, at init-totp.
		{name: "bearer missing", req: atInit(nil), status: 401},
		{name: "bearer Basic scheme with the password", req: atInit([]string{"Basic " + base64.StdEncoding.EncodeToString([]byte("alice:"+attackPassword))}), status: 401},
		{name: "bearer scheme only", req: atInit([]string{"Bearer"}), status: 401},
		{name: "bearer other scheme word", req: atInit([]string{"Token " + s.alice}), status: 401},
		{name: "bearer scheme without space", req: atInit([]string{"Bearer" + s.alice}), status: 401},
		{name: "bearer scheme twice", req: atInit([]string{"Bearer Bearer " + s.alice}), status: 401},
		{name: "bearer tab for space", req: atInit([]string{"Bearer\t" + s.alice}), status: 401},
		{name: "bearer two credentials", req: atInit([]string{"Bearer " + s.alice + " " + s.alice}), status: 401},
		{name: "bearer comma list", req: atInit([]string{"Bearer " + s.bob + ", Bearer " + s.alice}), status: 401},
		{name: "bearer duplicate headers, same token", req: atInit([]string{"Bearer " + s.alice, "Bearer " + s.alice}), status: 401},
		{name: "bearer duplicate headers, master key second", req: atInit([]string{"Bearer " + s.bob, "Bearer " + testMasterKey}), status: 401},
		{name: "bearer of 5000 bytes", req: atInit(bearer(strings.Repeat("a", 5000))), status: 401},
		{name: "bearer non-ASCII", req: atInit(bearer(s.alice + "é")), status: 401},
		{name: "bearer master key upper case", req: atInit(bearer(strings.ToUpper(testMasterKey))), status: 401},
		{name: "bearer master key with a suffix", req: atInit(bearer(testMasterKey + "x")), status: 401},
		{name: "bearer master key truncated", req: atInit(bearer(testMasterKey[:len(testMasterKey)-1])), status: 401},

		// Token kinds where they do not belong.
		{name: "pre-auth token at init-totp", req: hostileRequest{path: initPath("carol"), auth: bearer(s.pre)}, status: 401},
		{name: "pre-auth token at complete-totp", req: complete("carol", s.pre, s.carolEnrollment, goodCode), status: 401},
		{name: "host token at init-totp", req: atInit(bearer(s.host)), status: 403},
		{name: "node token at init-totp", req: atInit(bearer(s.node)), status: 403},
		{name: "host named alice at alice's init-totp", req: atInit(bearer(s.hostNamedAlice)), status: 403},
		{name: "node named alice at alice's init-totp", req: atInit(bearer(s.nodeNamedAlice)), status: 403},
		{name: "host named alice at alice's complete-totp", req: complete("alice", s.hostNamedAlice, s.bobEnrollment, goodCode), status: 403},
		{name: "node named alice at alice's complete-totp", req: complete("alice", s.nodeNamedAlice, s.bobEnrollment, goodCode), status: 403},
		{name: "user token at verify-totp", req: verify(verifyPath("carol"), s.carolTOTP, goodCode), status: 401},
		{name: "host token at verify-totp", req: verify(verifyPath("carol"), s.host, goodCode), status: 401},
		{name: "node token at verify-totp", req: verify(verifyPath("carol"), s.node, goodCode), status: 401},
		{name: "master key at verify-totp", req: verify(verifyPath("carol"), testMasterKey, goodCode), status: 401},

		// Forged and foreign tokens, at alice's init-totp as alice.
		{name: "forged alg none", req: atInit(bearer(signToken(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, header, userClaims))), status: 401},
		{name: "forged HS512 with the right key", req: atInit(bearer(signToken(t, jwt.SigningMethodHS512, s.fg.keys[audUser], header, userClaims))), status: 401},
		{name: "forged RS256 with the right kid", req: atInit(bearer(signToken(t, jwt.SigningMethodRS256, rsaKey, header, userClaims))), status: 401},
		{name: "header alg swapped to RS256, signature kept", req: atInit(bearer(editSegment(t, good, 0, func(h map[string]any) { h["alg"] = "RS256" }))), status: 401},
		{name: "header alg swapped to HS512, signature kept", req: atInit(bearer(editSegment(t, good, 0, func(h map[string]any) { h["alg"] = "HS512" }))), status: 401},
		{name: "kid swapped to an unknown key", req: atInit(bearer(editSegment(t, good, 0, func(h map[string]any) { h["kid"] = newForger(t, testSecret(9)).kid }))), status: 401},
		{name: "kid removed", req: atInit(bearer(signToken(t, jwt.SigningMethodHS256, s.fg.keys[audUser], map[string]any{"kid": nil}, userClaims))), status: 401},
		{name: "kid of ours, signed under another root secret", req: atInit(bearer(signToken(t, jwt.SigningMethodHS256, newForger(t, testSecret(9)).keys[audUser], header, userClaims))), status: 401},
		{name: "header jwk carrying the attacker's key", req: atInit(bearer(signToken(t, jwt.SigningMethodHS256, attackerKey,
			map[string]any{"kid": s.fg.kid, "jwk": map[string]any{"kty": "oct", "k": base64.RawURLEncoding.EncodeToString(attackerKey)}}, userClaims))), status: 401},
		{name: "header jku pointing elsewhere", req: atInit(bearer(signToken(t, jwt.SigningMethodHS256, attackerKey,
			map[string]any{"kid": s.fg.kid, "jku": "https://attacker.example/keys.json"}, userClaims))), status: 401},
		{name: "kid with path traversal", req: atInit(bearer(signToken(t, jwt.SigningMethodHS256, attackerKey, map[string]any{"kid": "../../../../dev/null"}, userClaims))), status: 401},
		{name: "kid as a number", req: atInit(bearer(signToken(t, jwt.SigningMethodHS256, s.fg.keys[audUser], map[string]any{"kid": 1}, userClaims))), status: 401},
		{name: "alg None capitalised, signature stripped", req: atInit(bearer(strings.TrimSuffix(editSegment(t, good, 0, func(h map[string]any) { h["alg"] = "None" }), parts[2]))), status: 401},
		{name: "signature stripped", req: atInit(bearer(parts[0] + "." + parts[1] + ".")), status: 401},
		{name: "signature of another token", req: atInit(bearer(parts[0] + "." + parts[1] + "." + strings.Split(s.alice, ".")[2])), status: 401},
		{name: "payload edited to bob, old signature", req: hostileRequest{path: initPath("bob"), auth: bearer(editSegment(t, s.alice, 1, func(c map[string]any) { c["sub"] = "bob" }))}, status: 401},
		{name: "payload edited to live longer, old signature", req: atInit(bearer(editSegment(t, s.expired, 1, func(c map[string]any) { c["exp"] = now.Add(time.Hour).Unix() }))), status: 401},
		{name: "signed with the master key as HMAC key", req: atInit(bearer(signToken(t, jwt.SigningMethodHS256, []byte(testMasterKey), header, userClaims))), status: 401},
		{name: "signed with the root secret itself", req: atInit(bearer(signToken(t, jwt.SigningMethodHS256, testSecret(1), header, userClaims))), status: 401},
		{name: "four segments", req: atInit(bearer(good + ".e30")), status: 401},
		{name: "expired, from a login two hours ago", req: atInit(bearer(s.expired)), status: 401},
		{name: "expired one second ago", req: atInit(bearer(s.forge(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Second).Unix() }))), status: 401},
		{name: "not valid before an hour from now", req: atInit(bearer(s.forge(func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Hour).Unix() }))), status: 401},
		{name: "iat a minute ahead", req: atInit(bearer(s.forge(func(c jwt.MapClaims) { c["iat"] = now.Add(time.Minute).Unix() }))), status: 401},
		{name: "lifetime longer than a user token's", req: atInit(bearer(s.forge(func(c jwt.MapClaims) { c["exp"] = now.Add(25 * time.Hour).Unix() }))), status: 401},
		{name: "without exp", req: atInit(bearer(s.forge(func(c jwt.MapClaims) { delete(c, "exp") }))), status: 401},
		{name: "exp as a string", req: atInit(bearer(s.forge(func(c jwt.MapClaims) { c["exp"] = "never" }))), status: 401},
		{name: "without jti", req: atInit(bearer(s.forge(func(c jwt.MapClaims) { delete(c, "jti") }))), status: 401},
		{name: "without iat", req: atInit(bearer(s.forge(func(c jwt.MapClaims) { delete(c, "iat") }))), status: 401},
		{name: "without sub", req: atInit(bearer(s.forge(func(c jwt.MapClaims) { delete(c, "sub") }))), status: 401},
		{name: "without generation", req: atInit(bearer(s.forge(func(c jwt.MapClaims) { delete(c, "gen") }))), status: 401},
		{name: "another generation", req: atInit(bearer(s.forge(func(c jwt.MapClaims) { c["gen"] = c["gen"].(uint64) + 1 }))), status: 401},
		{name: "wrong issuer, from another Authenticator", req: atInit(bearer(s.foreignIssuer)), status: 401},
		{name: "wrong issuer, forged", req: atInit(bearer(s.forge(func(c jwt.MapClaims) { c["iss"] = "evil" }))), status: 401},
		{name: "from another root secret", req: atInit(bearer(s.foreignKey)), status: 401},
		{name: "wrong audience", req: atInit(bearer(s.forge(func(c jwt.MapClaims) { c["aud"] = []string{"nmauth:admin"} }))), status: 401},
		{name: "two audiences", req: atInit(bearer(s.forge(func(c jwt.MapClaims) { c["aud"] = []string{audUser, audHost} }))), status: 401},
		{name: "without audience", req: atInit(bearer(s.forge(func(c jwt.MapClaims) { delete(c, "aud") }))), status: 401},
		{name: "user audience signed with the pre-auth key", req: atInit(bearer(s.fg.sign(t, audPreAuth, userClaims))), status: 401},
		{name: "host audience for an unknown host", req: atInit(bearer(s.fg.sign(t, audHost, s.fg.claims(audHost, "ghost", now, time.Hour)))), status: 401},
		{name: "node audience without a network", req: atInit(bearer(s.fg.sign(t, audNode, s.fg.claims(audNode, "alice", now, time.Hour)))), status: 401},

		// Path tricks in {username}, at init-totp.
		{name: "path %2F dot segments as alice", req: hostileRequest{path: initPath("alice%2F..%2Fbob"), auth: bearer(s.alice)}, status: 403},
		{name: "path encoded dot-dot", req: hostileRequest{path: initPath("%2e%2e"), auth: bearer(s.alice)}, status: 403},
		{name: "path encoded NUL", req: hostileRequest{path: initPath("alice%00"), auth: bearer(s.alice)}, status: 400},
		{name: "path encoded newline", req: hostileRequest{path: initPath("alice%0A"), auth: bearer(s.alice)}, status: 400},
		{name: "path invalid UTF-8", req: hostileRequest{path: initPath("alic%FF"), auth: bearer(s.alice)}, status: 400},
		{name: "path name of 5000 bytes", req: hostileRequest{path: initPath(strings.Repeat("a", 5000)), auth: bearer(s.alice)}, status: 400},
		{name: "path ALICE as bob", req: hostileRequest{path: initPath(aliceUpper), auth: bearer(s.bob)}, status: 403},
		{name: "path fullwidth alice as bob", req: hostileRequest{path: initPath(url.PathEscape(aliceFullwidth)), auth: bearer(s.bob)}, status: 403},
		{name: "path Cyrillic look-alike as alice", req: hostileRequest{path: initPath(url.PathEscape(aliceCyrillic)), auth: bearer(s.alice)}, status: 403},
		{name: "path Cyrillic look-alike as master", req: hostileRequest{path: initPath(url.PathEscape(aliceCyrillic)), auth: bearer(testMasterKey)}, status: 404},
		{name: "path other user as alice", req: hostileRequest{path: initPath("carol"), auth: bearer(s.alice)}, status: 403},
		{name: "re-enroll with a token from before TOTP, which turning TOTP on revoked", req: hostileRequest{path: initPath("carol"), auth: bearer(s.carolPlain)}, status: 401},
		{name: "path trailing slash", req: hostileRequest{path: initPath("alice") + "/", auth: bearer(s.alice)}, status: 404},
		{name: "PUT init-totp", req: hostileRequest{method: http.MethodPut, path: initPath("alice"), auth: bearer(s.alice)}, status: 405},

		// complete-totp.
		{name: "complete without content type", req: hostileRequest{path: completePath("alice"), auth: bearer(s.alice), ctype: noType, body: "{}"}, status: 415},
		{name: "complete body over 64 KiB", req: hostileRequest{path: completePath("alice"), auth: bearer(s.alice), body: tooBig}, status: 413},
		{name: "complete totp is a number", req: hostileRequest{path: completePath("alice"), auth: bearer(s.alice), body: `{"totp":123456}`}, status: 400},
		{name: "complete url is an object", req: hostileRequest{path: completePath("alice"), auth: bearer(s.alice), body: `{"otp_auth_url":{},"totp":"123456"}`}, status: 400},
		{name: "complete another user's enrollment", req: complete("alice", s.alice, s.bobEnrollment, s.code(s.bobEnrollment.secret, 0)), status: 400},
		{name: "complete bob's enrollment as alice at bob's path", req: complete("bob", s.alice, s.bobEnrollment, s.code(s.bobEnrollment.secret, 0)), status: 403},
		{name: "complete with a made-up signature", req: complete("bob", testMasterKey, enrollment{url: s.bobEnrollment.url, signature: "1.2.3"}, s.code(s.bobEnrollment.secret, 0)), status: 400},
		{name: "complete with an overflowing expiry", req: complete("bob", testMasterKey, enrollment{url: s.bobEnrollment.url, signature: "99999999999999999999999." + s.fg.kid + ".AAAA"}, s.code(s.bobEnrollment.secret, 0)), status: 400},
		{name: "complete with a URL of 60000 bytes", req: complete("bob", testMasterKey, enrollment{url: huge, signature: s.bobEnrollment.signature}, s.code(s.bobEnrollment.secret, 0)), status: 400},
		{name: "complete with a NUL in the URL", req: complete("bob", testMasterKey, enrollment{url: s.bobEnrollment.url + "\x00", signature: s.bobEnrollment.signature}, s.code(s.bobEnrollment.secret, 0)), status: 400},
		{name: "complete replayed with its spent code", req: complete("carol", s.carolTOTP, s.carolEnrollment, s.spentCode), status: 400},
		{name: "complete for a user that does not exist", req: complete("nobody", testMasterKey, s.bobEnrollment, s.code(s.bobEnrollment.secret, 0)), status: 404},

		// verify-totp.
		{name: "verify without bearer", req: hostileRequest{path: verifyPath("carol"), body: jsonBody("totp", goodCode)}, status: 401},
		{name: "verify pre-auth token at alice's path", req: verify(verifyPath("alice"), s.pre, goodCode), status: 403},
		{name: "verify pre-auth token at a Cyrillic look-alike path", req: verify(verifyPath(url.PathEscape("c\u0430rol")), s.pre, goodCode), status: 403},
		{name: "verify pre-auth token at a path name of 5000 bytes", req: verify(verifyPath(strings.Repeat("c", 5000)), s.pre, goodCode), status: 403},
		{name: "verify spent pre-auth token with a good code", req: verify(verifyPath("carol"), s.preSpent, goodCode), status: 401},
		{name: "verify replay of the spent code counts", req: verify(verifyPath("carol"), s.pre, s.spentCode), status: 401, change: codeFailed("carol")},
		{name: "verify wrong code counts", req: verify(verifyPath("carol"), s.pre, wrong), status: 401, change: codeFailed("carol")},
		{name: "verify wrong code at CAROL counts for carol", req: verify(verifyPath("CAROL"), s.pre, wrong), status: 401, change: codeFailed("carol")},
		{name: "verify wrong recovery code counts", req: verify(verifyPath("carol"), s.pre, "aaaa-bbbb-cccc-dddd"), status: 401, change: codeFailed("carol")},
		{name: "verify right code during backoff", req: verify(verifyPath("carol"), s.pre, goodCode), status: 429,
			setup: userBlocked("carol", 5, now.Add(time.Second), true)},
		{name: "verify right code during the longest backoff", req: verify(verifyPath("carol"), s.pre, goodCode), status: 429,
			setup: userBlocked("carol", 40, now.Add(15*time.Minute), true)},
		{name: "verify five digits", req: verify(verifyPath("carol"), s.pre, "12345"), status: 400},
		{name: "verify seven digits", req: verify(verifyPath("carol"), s.pre, "1234567"), status: 400},
		{name: "verify code with NUL", req: verify(verifyPath("carol"), s.pre, "12345\x00"), status: 400},
		{name: "verify code with a space", req: verify(verifyPath("carol"), s.pre, "123 456"), status: 400},
		{name: "verify Arabic-Indic digits", req: verify(verifyPath("carol"), s.pre, "١٢٣٤٥٦"), status: 400},
		{name: "verify fullwidth digits", req: verify(verifyPath("carol"), s.pre, "１２３４５６"), status: 400},
		{name: "verify code of 60000 bytes", req: verify(verifyPath("carol"), s.pre, huge), status: 400},
		{name: "verify code invalid UTF-8", req: hostileRequest{path: verifyPath("carol"), auth: bearer(s.pre), body: "{\"totp\":\"12345\xff\"}"}, status: 400},
		{name: "verify totp is a number", req: hostileRequest{path: verifyPath("carol"), auth: bearer(s.pre), body: `{"totp":123456}`}, status: 400},
		{name: "verify totp is an array", req: hostileRequest{path: verifyPath("carol"), auth: bearer(s.pre), body: `{"totp":["123456"]}`}, status: 400},
		{name: "verify without content type", req: hostileRequest{path: verifyPath("carol"), auth: bearer(s.pre), ctype: noType, body: jsonBody("totp", goodCode)}, status: 415},
		{name: "verify body over 64 KiB", req: hostileRequest{path: verifyPath("carol"), auth: bearer(s.pre), body: tooBig}, status: 413},
		{name: "verify duplicate Authorization headers", req: hostileRequest{path: verifyPath("carol"), auth: []string{"Bearer " + s.pre, "Bearer " + s.pre}, body: jsonBody("totp", goodCode)}, status: 401},
		{name: "verify forged pre-auth token with a fresh id", req: verify(verifyPath("carol"), forgedPre(func(c jwt.MapClaims) { c["jti"] = rand.Text() }), goodCode), status: 401},
		{name: "verify forged pre-auth token, live id, expired", req: verify(verifyPath("carol"), forgedPre(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Second).Unix() }), goodCode), status: 401},
		{name: "verify pre-auth audience signed with the user key", req: verify(verifyPath("carol"), func() string {
			c := s.fg.claims(audPreAuth, "carol", now, 5*time.Minute)
			c["jti"] = state.Of(s.baseline.Users["carol"].State).PreAuthID
			return s.fg.sign(t, audUser, c)
		}(), goodCode), status: 401},
		{name: "verify pre-auth payload edited to live longer, old signature", req: verify(verifyPath("carol"), editSegment(t, s.pre, 1, func(c map[string]any) { c["exp"] = now.Add(time.Hour).Unix() }), goodCode), status: 401},
	}
}

// TestHostileRequests sends every hostile request over a real HTTP server
// from the same starting state, and checks that each is refused with its
// status in the error envelope, that the store changed only by the
// failure the request may count, and that nothing answered 5xx or
// panicked.
func TestHostileRequests(t *testing.T) {
	s := newScene(t)
	cases := s.cases(t)
	counted := map[int]int{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.status < 400 || tc.status > 499 {
				t.Fatalf("case expects %d; every hostile request must get a 4xx", tc.status)
			}
			start := s.baseline.clone()
			if tc.setup != nil {
				tc.setup(&start)
			}
			s.watched.restore(t, start)
			before := s.watched.snapshot(t)

			r := s.sendHostile(t, tc.req)
			counted[r.status]++
			wantError(t, r, tc.status)
			if r.status == http.StatusTooManyRequests {
				if n, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || n < 1 {
					t.Errorf("429 with Retry-After %q", r.header.Get("Retry-After"))
				}
			}
			want := before.clone()
			if tc.change != nil {
				tc.change(&want)
			}
			if got := s.watched.snapshot(t); !reflect.DeepEqual(got, want) {
				t.Errorf("store changed beyond what the request may count:%s", diffState(want, got))
			}
		})
	}
	t.Logf("%d hostile requests; answers by status: %v", len(cases), counted)
	if len(cases) < 60 {
		t.Errorf("only %d hostile requests, want at least 60", len(cases))
	}
	if n := s.serverErr.Load(); n != 0 {
		t.Errorf("%d answers were 5xx", n)
	}
	if n := s.panics.Load(); n != 0 {
		t.Errorf("%d requests panicked", n)
	}
	if n := s.errorLogs.Load(); n != 0 {
		t.Errorf("%d error lines were logged", n)
	}
}

// TestDotSegmentsRedirectToTheCanonicalRoute checks path tricks that the
// router resolves before the handler sees them: it redirects to the
// cleaned path (keeping the method from Go 1.26 on, see muxRedirect), and
// the cleaned route then judges the credential as usual. Nothing in the
// store changes.
func TestDotSegmentsRedirectToTheCanonicalRoute(t *testing.T) {
	s := newScene(t)
	tests := []struct {
		name, path, location string
		auth                 []string
		status               int // at the location
	}{
		{"dot-dot to bob", "/api/users/alice/../bob/auth/init-totp", initPath("bob"), bearer(s.alice), 403},
		{"dot segment", "/api/users/alice/auth/./init-totp", initPath("alice"), bearer(s.bob), 403},
		{"empty name", "/api/users//auth/init-totp", "/api/users/auth/init-totp", bearer(s.alice), 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := s.sendHostile(t, hostileRequest{path: tc.path, auth: tc.auth})
			if r.status != muxRedirect || r.header.Get("Location") != tc.location {
				t.Fatalf("%s: %d to %q, want %d to %q", tc.path, r.status, r.header.Get("Location"), muxRedirect, tc.location)
			}
			r = s.sendHostile(t, hostileRequest{path: tc.location, auth: tc.auth})
			if tc.status == http.StatusNotFound {
				wantStatus(t, r, tc.status) // no route: the mux's own answer
			} else {
				wantError(t, r, tc.status)
			}
			if got := s.watched.snapshot(t); !reflect.DeepEqual(got, s.baseline) {
				t.Errorf("store changed:%s", diffState(s.baseline, got))
			}
		})
	}
}

// TestPRECISNamesAreOneUser checks what PRECIS means for authorization: a
// name that maps to alice is alice, for her and for no one else, and a
// look-alike in another script is someone else.
func TestPRECISNamesAreOneUser(t *testing.T) {
	s := newScene(t)
	tests := []struct {
		name, path string
		token      string
		status     int
	}{
		{"alice at ALICE", initPath(aliceUpper), s.alice, 200},
		{"alice at fullwidth alice", initPath(url.PathEscape(aliceFullwidth)), s.alice, 200},
		{"bob at ALICE", initPath(aliceUpper), s.bob, 403},
		{"alice at Cyrillic alice", initPath(url.PathEscape(aliceCyrillic)), s.alice, 403},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := s.sendHostile(t, hostileRequest{path: tc.path, auth: bearer(tc.token)})
			if tc.status != 200 {
				wantError(t, r, tc.status)
				return
			}
			wantStatus(t, r, 200)
			if u := r.json(t)["otp_auth_url"].(string); !strings.Contains(u, ":alice?") {
				t.Fatalf("enrollment for %q is not alice's: %s", tc.path, u)
			}
		})
	}
	// Logging in as fullwidth ALICE is logging in as alice.
	r := s.loginUser("ＡＬＩＣＥ", attackPassword)
	wantStatus(t, r, 200)
	if got := r.response(t)["userName"]; got != "alice" {
		t.Fatalf("fullwidth login is %v, want alice", got)
	}
	if got := s.watched.snapshot(t); !reflect.DeepEqual(got, s.baseline) {
		t.Errorf("store changed:%s", diffState(s.baseline, got))
	}
}
