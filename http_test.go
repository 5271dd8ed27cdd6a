package nmauth_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

func TestHostLogin(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		f.addHost(testHostIDs[0], "AA:BB:CC:DD:EE:01", "host-password-1")
		f.addHost(testHostIDs[1], "", "host-password-2")

		// netmaker is the status in the Netmaker profile where it differs:
		// its host ids must be UUIDs, and an unknown one is a 400. A changed
		// MAC logs in by default (Config.RefuseMACChange refuses it).
		tests := []struct {
			name, id, mac, password string
			status, netmaker        int
		}{
			{"registered mac", testHostIDs[0], "aa:bb:cc:dd:ee:01", "host-password-1", 200, 0},
			{"mac in other notation", testHostIDs[0], "AA-BB-CC-DD-EE-01", "host-password-1", 200, 0},
			{"no mac sent", testHostIDs[0], "", "host-password-1", 200, 0},
			{"host without mac", testHostIDs[1], "aa:bb:cc:dd:ee:99", "host-password-2", 200, 0},
			{"other mac", testHostIDs[0], "aa:bb:cc:dd:ee:02", "host-password-1", 200, 0},
			{"wrong password", testHostIDs[0], "", "wrong-password", 401, 0},
			{"unknown host", testHostIDs[2], "", "host-password-1", 401, 400},
			{"id in upper case", strings.ToUpper(testHostIDs[0]), "", "host-password-1", 200, 0},
			{"id not a UUID", "host-1", "", "host-password-1", 401, 400},
			{"id of UUID length, not hex", "g" + testHostIDs[0][1:], "", "host-password-1", 401, 400},
			{"malformed mac", testHostIDs[0], "not-a-mac", "host-password-1", 400, 0},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				status := tc.status
				if w == nmauth.WireNetmaker && tc.netmaker != 0 {
					status = tc.netmaker
				}
				r := f.do("/api/hosts/adm/authenticate", "", map[string]string{"id": tc.id, "macaddress": tc.mac, "password": tc.password})
				if status != 200 {
					wantError(t, r, status)
					return
				}
				wantStatus(t, r, 200)
				code, msg := r.envelope(t)
				if code != 200 || msg == "" || r.field(t, "id") != testHostIDs[0] && r.field(t, "id") != testHostIDs[1] {
					t.Fatalf("envelope %s", r.body)
				}
				tok, _ := r.field(t, "authToken").(string)
				p, err := f.auth.CheckBearer(context.Background(), tok)
				if err != nil || p.Kind != nmauth.KindHost || p.Name != r.field(t, "id") {
					t.Fatalf("host token checks as %+v, %v", p, err)
				}
			})
		}
	})
}

func TestUserLoginWithoutTOTP(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		f.addUser("alice", "correct horse battery")
		r := f.loginUser("Alice", "correct horse battery")
		wantStatus(t, r, 200)
		if r.field(t, "userName") != "alice" || r.field(t, "totpRequired") != nil || r.field(t, "preAuthToken") != nil {
			t.Fatalf("login answer %s", r.body)
		}
		p, err := f.auth.CheckBearer(context.Background(), r.field(t, "authToken").(string))
		if err != nil || p.Kind != nmauth.KindUser || p.Name != "alice" || p.TOTP {
			t.Fatalf("user token checks as %+v, %v", p, err)
		}
		// exp has whole seconds; iat keeps nanoseconds.
		if got := p.ExpiresAt.Sub(p.IssuedAt); got > time.Hour || got <= time.Hour-time.Second {
			t.Fatalf("user token lifetime %s, want 1h", got)
		}
	})
}

// TestLoginFailuresLookAlike checks that an unknown user, a wrong password
// and a disabled account answer with the same status and body.
func TestLoginFailuresLookAlike(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		f.addUser("alice", "correct horse battery")
		f.addUser("bob", "correct horse battery")
		if err := f.auth.Admin().DisableUser(context.Background(), "bob"); err != nil {
			t.Fatal(err)
		}
		var bodies []string
		for _, c := range [][2]string{
			{"nobody", "correct horse battery"},
			{"alice", "wrong password here"},
			{"bob", "correct horse battery"},
		} {
			r := f.loginUser(c[0], c[1])
			wantError(t, r, http.StatusUnauthorized)
			bodies = append(bodies, string(r.body))
		}
		for _, b := range bodies[1:] {
			if b != bodies[0] {
				t.Fatalf("login failures differ: %q vs %q", bodies[0], b)
			}
		}
	})
}

func TestEnrollmentThenLogin(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		f.addUser("alice", "correct horse battery")
		tok := f.userToken("alice", "correct horse battery")

		e := f.initTOTP("alice", tok)
		for _, want := range []string{"otpauth://totp/", "issuer=nmauth", "algorithm=SHA1", "digits=6", "period=30", "alice"} {
			if !strings.Contains(e.url, want) {
				t.Fatalf("otp_auth_url %q lacks %q", e.url, want)
			}
		}
		if u, _ := f.store.GetUser(context.Background(), "alice"); u.TOTPEnabled() {
			t.Fatal("init-totp stored a secret")
		}

		r := f.do("/api/users/alice/auth/complete-totp", tok, map[string]string{
			"otp_auth_url": e.url, "otp_auth_url_signature": e.signature, "totp": f.code(e.secret, 0),
		})
		wantStatus(t, r, 200)
		codes := r.field(t, "recoveryCodes").([]any)
		if len(codes) != 10 {
			t.Fatalf("%d recovery codes, want 10", len(codes))
		}
		u, _ := f.store.GetUser(context.Background(), "alice")
		if !u.TOTPEnabled() || bytes.Contains(u.TOTPSecret, []byte(e.secret)) || bytes.Contains(u.TOTPSecret, mustBase32(t, e.secret)) {
			t.Fatal("TOTP secret not stored sealed")
		}
		for _, h := range u.RecoveryCodes {
			for _, c := range codes {
				if strings.Contains(h, c.(string)) {
					t.Fatal("recovery code stored in the clear")
				}
			}
		}

		f.clock.Advance(time.Minute)
		pre := f.preAuthToken("alice", "correct horse battery")
		r = f.verifyTOTP("alice", pre, f.code(e.secret, 0))
		wantStatus(t, r, 200)
		if r.field(t, "userName") != "alice" {
			t.Fatalf("verify-totp answer %s", r.body)
		}
		p, err := f.auth.CheckBearer(context.Background(), r.field(t, "authToken").(string))
		if err != nil || p.Kind != nmauth.KindUser || p.Name != "alice" || !p.TOTP {
			t.Fatalf("token from verify-totp checks as %+v, %v", p, err)
		}

		// The pre-auth token is spent, and the same code cannot be used again
		// even with a fresh pre-auth token.
		wantError(t, f.verifyTOTP("alice", pre, f.code(e.secret, 0)), 401)
		pre2 := f.preAuthToken("alice", "correct horse battery")
		wantError(t, f.verifyTOTP("alice", pre2, f.code(e.secret, 0)), 401)
		if f.events.count(nmauth.EventTOTPReplayed) != 1 {
			t.Fatalf("replay not reported as an event")
		}
		// A code from the next step works with the same pre-auth token.
		f.clock.Advance(30 * time.Second)
		wantStatus(t, f.verifyTOTP("alice", pre2, f.code(e.secret, 0)), 200)
	})
}

func TestTOTPWindow(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		f.addUser("alice", "correct horse battery")
		secret, _ := f.enroll("alice", f.userToken("alice", "correct horse battery"))
		tests := []struct {
			name   string
			offset time.Duration
			status int
		}{
			{"two steps behind", -60 * time.Second, 401},
			{"one step ahead", 30 * time.Second, 200},
			{"two steps ahead", 60 * time.Second, 401},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				f.clock.Advance(3 * time.Minute) // a fresh step, past any backoff
				pre := f.preAuthToken("alice", "correct horse battery")
				r := f.verifyTOTP("alice", pre, f.code(secret, tc.offset))
				wantStatus(t, r, tc.status)
			})
		}
	})
}

// TestSameCodeConcurrently sends one valid code 50 times at once.
func TestSameCodeConcurrently(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		f.addUser("alice", "correct horse battery")
		secret, _ := f.enroll("alice", f.userToken("alice", "correct horse battery"))
		pre := f.preAuthToken("alice", "correct horse battery")
		code := f.code(secret, 0)

		var wg sync.WaitGroup
		statuses := make(chan int, 50)
		start := make(chan struct{})
		for range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				statuses <- f.verifyTOTP("alice", pre, code).status
			}()
		}
		close(start)
		wg.Wait()
		close(statuses)
		ok := 0
		for s := range statuses {
			switch s {
			case 200:
				ok++
			case 401:
			default:
				t.Errorf("unexpected status %d", s)
			}
		}
		if ok != 1 {
			t.Fatalf("%d requests succeeded with one code, want exactly 1", ok)
		}
	})
}

func TestPreAuthTokenDiesAfterFiveWrongCodes(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		f.addUser("alice", "correct horse battery")
		secret, _ := f.enroll("alice", f.userToken("alice", "correct horse battery"))
		pre := f.preAuthToken("alice", "correct horse battery")
		right := f.code(secret, 0)
		wrong := "000000"
		if wrong == right {
			wrong = "111111"
		}
		for i := range 5 {
			wantError(t, f.verifyTOTP("alice", pre, wrong), 401)
			_ = i
		}
		f.clock.Advance(time.Second) // past the first backoff step
		wantError(t, f.verifyTOTP("alice", pre, right), 401)
	})
}

func TestReenrollment(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		f.addUser("alice", "correct horse battery")
		plain := f.userToken("alice", "correct horse battery")
		secret, _ := f.enroll("alice", plain)

		// Turning TOTP on revoked the token from before, without TOTP.
		wantError(t, f.do("/api/users/alice/auth/init-totp", plain, nil), 401)

		pre := f.preAuthToken("alice", "correct horse battery")
		r := f.verifyTOTP("alice", pre, f.code(secret, 0))
		wantStatus(t, r, 200)
		fresh := r.field(t, "authToken").(string)
		f.initTOTP("alice", fresh)

		f.clock.Advance(11 * time.Minute)
		wantError(t, f.do("/api/users/alice/auth/init-totp", fresh, nil), 403)
		f.initTOTP("alice", testMasterKey)
	})
}

// TestTOTPOnRevokesAndReturnsAToken: turning TOTP on revokes the
// password-only tokens, the caller's included, and complete-totp hands
// back a fresh token that passed TOTP.
func TestTOTPOnRevokesAndReturnsAToken(t *testing.T) {
	f := newFixture(t)
	f.addUser("alice", "correct horse battery")
	plain := f.userToken("alice", "correct horse battery")
	other := f.userToken("alice", "correct horse battery")
	e := f.initTOTP("alice", plain)
	r := f.do("/api/users/alice/auth/complete-totp", plain, map[string]string{
		"otp_auth_url": e.url, "otp_auth_url_signature": e.signature, "totp": f.code(e.secret, 0),
	})
	wantStatus(t, r, 200)
	for _, tok := range []string{plain, other} {
		if _, err := f.auth.CheckBearer(context.Background(), tok); !errors.Is(err, nmauth.ErrUnauthenticated) {
			t.Errorf("password-only token after TOTP on: %v, want ErrUnauthenticated", err)
		}
	}
	fresh, _ := r.response(t)["authToken"].(string)
	p, err := f.auth.CheckBearer(context.Background(), fresh)
	if err != nil || !p.TOTP || p.Name != "alice" {
		t.Fatalf("complete-totp token = %+v, %v; want alice's TOTP token", p, err)
	}
}

// TestReplacingTheSecondFactor: a fresh TOTP token alone does not replace
// the second factor; with a current code it does, right after the TOTP
// login (the new secret's first code is not compared with the old
// secret's steps), and every other token dies.
func TestReplacingTheSecondFactor(t *testing.T) {
	for _, withRecovery := range []bool{false, true} {
		t.Run(fmt.Sprintf("recovery=%t", withRecovery), func(t *testing.T) {
			f := newFixture(t)
			f.addUser("alice", "correct horse battery")
			secret, codes := f.enroll("alice", f.userToken("alice", "correct horse battery"))
			login := func() string {
				r := f.verifyTOTP("alice", f.preAuthToken("alice", "correct horse battery"), f.code(secret, 0))
				wantStatus(t, r, 200)
				return r.json(t)["authToken"].(string)
			}
			bystander := login()
			f.clock.Advance(30 * time.Second)
			fresh := login()

			e := f.initTOTP("alice", fresh)
			body := map[string]string{"otp_auth_url": e.url, "otp_auth_url_signature": e.signature, "totp": f.code(e.secret, 0)}
			wantError(t, f.do("/api/users/alice/auth/complete-totp", fresh, body), 403)

			current := f.code(secret, 30*time.Second)
			if withRecovery {
				current = codes[0]
			}
			body["current_totp"] = current
			r := f.do("/api/users/alice/auth/complete-totp", fresh, body)
			wantStatus(t, r, 200)
			for _, tok := range []string{bystander, fresh} {
				if _, err := f.auth.CheckBearer(context.Background(), tok); !errors.Is(err, nmauth.ErrUnauthenticated) {
					t.Errorf("token from before the replacement: %v, want ErrUnauthenticated", err)
				}
			}
			if _, err := f.auth.CheckBearer(context.Background(), r.response(t)["authToken"].(string)); err != nil {
				t.Errorf("token from the replacement refused: %v", err)
			}
			// The new secret is the one that counts now.
			f.clock.Advance(30 * time.Second)
			pre := f.preAuthToken("alice", "correct horse battery")
			wantError(t, f.verifyTOTP("alice", pre, f.code(secret, 0)), 401)
			wantStatus(t, f.verifyTOTP("alice", pre, f.code(e.secret, 0)), 200)
		})
	}
}

// TestPendingEnrollmentDiesWithPasswordChange: an init-totp answer is
// bound to the account's generation.
func TestPendingEnrollmentDiesWithPasswordChange(t *testing.T) {
	f := newFixture(t)
	f.addUser("alice", "correct horse battery")
	e := f.initTOTP("alice", testMasterKey)
	if err := f.auth.Admin().SetUserPassword(context.Background(), "alice", "another horse battery"); err != nil {
		t.Fatal(err)
	}
	r := f.do("/api/users/alice/auth/complete-totp", testMasterKey, map[string]string{
		"otp_auth_url": e.url, "otp_auth_url_signature": e.signature, "totp": f.code(e.secret, 0),
	})
	wantError(t, r, 400)
}

func TestEnrollmentSignatureRules(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		f.addUser("alice", "correct horse battery")
		f.addUser("bob", "correct horse battery")
		alice := f.userToken("alice", "correct horse battery")
		bob := f.userToken("bob", "correct horse battery")
		ea := f.initTOTP("alice", alice)
		eb := f.initTOTP("bob", bob)

		other := newFixture(t, withWire(w)) // a deployment with another root secret
		other.auth, _ = nmauth.New(nmauth.Config{Store: f.store, Secrets: [][]byte{testSecret(9)}, Now: f.clock.Now})
		foreign, err := other.auth.InitTOTP(context.Background(), nmauth.Principal{Kind: nmauth.KindMaster}, "alice")
		if err != nil {
			t.Fatal(err)
		}

		tamperedURL := strings.Replace(ea.url, "secret=", "secret=A", 1)
		sig := []byte(ea.signature)
		sig[len(sig)-2] ^= 1
		tests := []struct {
			name, url, sig, secret string
			wait                   time.Duration
		}{
			{"tampered URL", tamperedURL, ea.signature, ea.secret, 0},
			{"tampered signature", ea.url, string(sig), ea.secret, 0},
			{"another user's enrollment", eb.url, eb.signature, eb.secret, 0},
			{"foreign key", foreign.URL, foreign.Signature, secretOf(t, foreign.URL), 0},
			{"empty signature", ea.url, "", ea.secret, 0},
			{"expired", ea.url, ea.signature, ea.secret, 10*time.Minute + time.Second},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				f.clock.Advance(tc.wait)
				r := f.do("/api/users/alice/auth/complete-totp", alice, map[string]string{
					"otp_auth_url": tc.url, "otp_auth_url_signature": tc.sig, "totp": f.code(tc.secret, 0),
				})
				wantError(t, r, 400)
				if u, _ := f.store.GetUser(context.Background(), "alice"); u.TOTPEnabled() {
					t.Fatal("TOTP turned on by a bad enrollment")
				}
			})
		}
	})
}

func TestWrongFirstCodeChangesNothing(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		f.addUser("alice", "correct horse battery")
		tok := f.userToken("alice", "correct horse battery")
		e := f.initTOTP("alice", tok)
		right := f.code(e.secret, 0)
		wrong := "123456"
		if wrong == right {
			wrong = "654321"
		}
		r := f.do("/api/users/alice/auth/complete-totp", tok, map[string]string{
			"otp_auth_url": e.url, "otp_auth_url_signature": e.signature, "totp": wrong,
		})
		wantError(t, r, 400)
		if u, _ := f.store.GetUser(context.Background(), "alice"); u.TOTPEnabled() {
			t.Fatal("TOTP on after a wrong first code")
		}
	})
}

// TestTokenKindsWhereTheyDoNotBelong presents every credential kind on
// every route that must refuse it.
func TestTokenKindsWhereTheyDoNotBelong(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		f.addUser("alice", "correct horse battery")
		f.addUser("bob", "correct horse battery")
		f.addUser("carol", "correct horse battery")
		f.addHost(testHostIDs[0], "", "host-password-1")
		alice := f.userToken("alice", "correct horse battery")
		bob := f.userToken("bob", "correct horse battery")
		f.enroll("carol", f.userToken("carol", "correct horse battery"))
		pre := f.preAuthToken("carol", "correct horse battery")
		r := f.do("/api/hosts/adm/authenticate", "", map[string]string{"id": testHostIDs[0], "password": "host-password-1"})
		host := r.field(t, "authToken").(string)
		node, err := f.auth.IssueNodeToken(t.Context(), "net-1", "node-1")
		if err != nil {
			t.Fatal(err)
		}
		totpBody := map[string]string{"totp": "123456"}

		tests := []struct {
			name, path, bearer string
			body               any
			status             int
		}{
			{"pre-auth token at init-totp", "/api/users/carol/auth/init-totp", pre, nil, 401},
			{"pre-auth token at complete-totp", "/api/users/carol/auth/complete-totp", pre, totpBody, 401},
			{"user token at verify-totp", "/api/users/carol/auth/verify-totp", alice, totpBody, 401},
			{"host token at verify-totp", "/api/users/carol/auth/verify-totp", host, totpBody, 401},
			{"node token at verify-totp", "/api/users/carol/auth/verify-totp", node, totpBody, 401},
			{"master key at verify-totp", "/api/users/carol/auth/verify-totp", testMasterKey, totpBody, 401},
			{"pre-auth token for another user", "/api/users/alice/auth/verify-totp", pre, totpBody, 403},
			{"other user's token at init-totp", "/api/users/alice/auth/init-totp", bob, nil, 403},
			{"other user's token at complete-totp", "/api/users/alice/auth/complete-totp", bob, totpBody, 403},
			{"host token at init-totp", "/api/users/alice/auth/init-totp", host, nil, 403},
			{"node token at init-totp", "/api/users/alice/auth/init-totp", node, nil, 403},
			{"no bearer at init-totp", "/api/users/alice/auth/init-totp", "", nil, 401},
			{"garbage bearer at init-totp", "/api/users/alice/auth/init-totp", "abc.def.ghi", nil, 401},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				wantError(t, f.do(tc.path, tc.bearer, tc.body), tc.status)
			})
		}
		if _, err := f.auth.CheckBearer(context.Background(), pre); err == nil {
			t.Fatal("CheckBearer accepted a pre-auth token")
		}
	})
}

func TestBearerAcceptsEachKind(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		f.addUser("alice", "correct horse battery")
		f.addHost(testHostIDs[0], "", "host-password-1")
		user := f.userToken("alice", "correct horse battery")
		r := f.do("/api/hosts/adm/authenticate", "", map[string]string{"id": testHostIDs[0], "password": "host-password-1"})
		host := r.field(t, "authToken").(string)
		node, _ := f.auth.IssueNodeToken(t.Context(), "net-1", "node-1")

		tests := []struct {
			cred string
			want nmauth.Principal
		}{
			{testMasterKey, nmauth.Principal{Kind: nmauth.KindMaster}},
			{user, nmauth.Principal{Kind: nmauth.KindUser, Name: "alice"}},
			{host, nmauth.Principal{Kind: nmauth.KindHost, Name: testHostIDs[0]}},
			{node, nmauth.Principal{Kind: nmauth.KindNode, Name: "node-1", Network: "net-1"}},
		}
		for _, tc := range tests {
			t.Run(string(tc.want.Kind), func(t *testing.T) {
				for range 2 { // the second check is served from the cache
					p, err := f.auth.CheckBearer(context.Background(), tc.cred)
					if err != nil || p.Kind != tc.want.Kind || p.Name != tc.want.Name || p.Network != tc.want.Network {
						t.Fatalf("CheckBearer = %+v, %v; want %+v", p, err, tc.want)
					}
				}
			})
		}
	})
}

func TestTokenExpiryAndRevocation(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		f.addUser("alice", "correct horse battery")
		f.addUser("bob", "correct horse battery")
		f.addHost(testHostIDs[0], "", "host-password-1")
		ctx := context.Background()

		alice := f.userToken("alice", "correct horse battery")
		bob := f.userToken("bob", "correct horse battery")
		node, _ := f.auth.IssueNodeToken(t.Context(), "net-1", "node-1")
		if _, err := f.auth.CheckBearer(ctx, alice); err != nil {
			t.Fatal(err)
		}
		if err := f.auth.Admin().DisableUser(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.auth.CheckBearer(ctx, alice); err == nil {
			t.Fatal("token of a disabled user accepted")
		}
		if err := f.auth.Admin().DeleteUser(ctx, "bob"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.auth.CheckBearer(ctx, bob); err == nil {
			t.Fatal("token of a deleted user accepted")
		}
		// A user re-created with the same name does not inherit old tokens.
		f.addUser("bob", "another password")
		if _, err := f.auth.CheckBearer(ctx, bob); err == nil {
			t.Fatal("token of a deleted user accepted after the name was reused")
		}
		if _, err := f.auth.CheckBearer(ctx, f.userToken("bob", "another password")); err != nil {
			t.Fatalf("token of the new bob refused: %v", err)
		}
		f.clock.Advance(15*time.Minute + time.Second)
		if _, err := f.auth.CheckBearer(ctx, node); err == nil {
			t.Fatal("expired node token accepted")
		}
		f.clock.Advance(time.Hour)
		f.addUser("carol", "correct horse battery")
		carol := f.userToken("carol", "correct horse battery")
		f.clock.Advance(time.Hour)
		if _, err := f.auth.CheckBearer(ctx, carol); err == nil {
			t.Fatal("expired user token accepted")
		}
	})
}

// TestDisabledElsewhere disables a user behind the Authenticator's back,
// as another replica would: the token stops working within the status
// cache's lifetime.
func TestDisabledElsewhere(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		f.addUser("alice", "correct horse battery")
		ctx := context.Background()
		tok := f.userToken("alice", "correct horse battery")
		if _, err := f.auth.CheckBearer(ctx, tok); err != nil {
			t.Fatal(err)
		}
		f.store.UpdateUser(ctx, "alice", func(u *nmauth.User) error { u.Disabled = true; return nil })
		f.clock.Advance(2 * time.Second)
		if _, err := f.auth.CheckBearer(ctx, tok); err == nil {
			t.Fatal("token still accepted after the status cache expired")
		}
	})
}

// TestTokensFromOtherKeys checks that tokens signed under a foreign root
// secret are refused and that rotation keeps old tokens valid.
func TestTokensFromOtherKeys(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		f.addUser("alice", "correct horse battery")
		old := f.userToken("alice", "correct horse battery")

		stranger, _ := nmauth.New(nmauth.Config{Store: f.store, Secrets: [][]byte{testSecret(7)}, Now: f.clock.Now})
		if _, err := stranger.CheckBearer(context.Background(), old); err == nil {
			t.Fatal("token accepted under a foreign root secret")
		}
		rotated, _ := nmauth.New(nmauth.Config{Store: f.store, Secrets: [][]byte{testSecret(7), testSecret(1)}, Now: f.clock.Now})
		if _, err := rotated.CheckBearer(context.Background(), old); err != nil {
			t.Fatalf("token under the older key refused after rotation: %v", err)
		}
	})
}

func TestRequestRules(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		f.addUser("alice", "correct horse battery")
		tok := f.userToken("alice", "correct horse battery")
		login := "/api/users/adm/authenticate"
		tests := []struct {
			name, path, contentType, body string
			status                        int
		}{
			{"no content type", login, "", `{"username":"alice"}`, 415},
			{"text/plain", login, "text/plain", `{"username":"alice"}`, 415},
			{"too large", login, "application/json", `{"username":"` + strings.Repeat("a", 70<<10) + `"}`, 413},
			{"trailing value", login, "application/json", `{"username":"a"} {}`, 400},
			{"trailing garbage", login, "application/json", `{"username":"a"}x`, 400},
			{"wrong type", login, "application/json", `{"username":42,"password":"x"}`, 400},
			{"not an object", login, "application/json", `["alice"]`, 400},
			{"empty body", login, "application/json", ``, 400},
			{"truncated", login, "application/json", `{"username":`, 400},
			{"host wrong type", "/api/hosts/adm/authenticate", "application/json", `{"id":true}`, 400},
			{"complete-totp wrong type", "/api/users/alice/auth/complete-totp", "application/json", `{"totp":123456}`, 400},
			{"charset is fine", login, "application/json; charset=utf-8", `{"username":"alice","password":"bad password"}`, 401},
			{"bad code format", "/api/users/alice/auth/complete-totp", "application/json", `{"totp":"12ab56"}`, 400},
			{"invalid path username", "/api/users/%20/auth/init-totp", "", ``, 400},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				req, _ := http.NewRequest(http.MethodPost, f.srv.URL+tc.path, strings.NewReader(tc.body))
				if tc.contentType != "" {
					req.Header.Set("Content-Type", tc.contentType)
				}
				req.Header.Set("Authorization", "Bearer "+tok)
				wantError(t, f.send(req), tc.status)
			})
		}
		// Wrong methods and unknown paths are not served.
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+login, nil)
		if r := f.send(req); r.status != http.StatusMethodNotAllowed {
			t.Fatalf("GET login: %d", r.status)
		}
	})
}

func TestRetryAfterOnThrottle(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		f.addUser("alice", "correct horse battery")
		for range 5 {
			wantError(t, f.loginUser("alice", "wrong password!"), 401)
		}
		r := f.loginUser("alice", "correct horse battery")
		wantError(t, r, 429)
		if r.header.Get("Retry-After") != "1" {
			t.Fatalf("Retry-After %q, want 1", r.header.Get("Retry-After"))
		}
		f.clock.Advance(time.Second)
		wantStatus(t, f.loginUser("alice", "correct horse battery"), 200)
	})
}

func TestMountedBesideAppRoutesAndUnderPrefix(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		f.addUser("alice", "correct horse battery")

		mux := http.NewServeMux()
		mux.Handle("/api/", f.auth.Handler())
		mux.Handle("/v2/", http.StripPrefix("/v2", f.auth.Handler()))
		mux.Handle("GET /api/networks", f.auth.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p, _ := nmauth.FromContext(r.Context())
			w.Write([]byte("networks for " + p.Name))
		})))
		srv := httptest.NewServer(mux)
		defer srv.Close()
		f.srv = srv
		// The document describes the handler at /api/, not this
		// application's own route or the prefix it mounts the handler under.
		f.openapi = nil

		tok := f.userToken("alice", "correct horse battery")
		r := f.do("/v2/api/users/adm/authenticate", "", map[string]string{"username": "alice", "password": "correct horse battery"})
		wantStatus(t, r, 200)
		wantStatus(t, f.do("/v2/api/users/alice/auth/init-totp", tok, nil), 200)
		f.initTOTP("alice", tok)

		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/networks", nil)
		req.Header.Set("Authorization", "bEaReR "+tok)
		r = f.send(req)
		if r.status != 200 || string(r.body) != "networks for alice" {
			t.Fatalf("app route: %d %s", r.status, r.body)
		}
		req, _ = http.NewRequest(http.MethodGet, srv.URL+"/api/networks", nil)
		wantError(t, f.send(req), 401)
	})
}

func TestBearerHeaderForms(t *testing.T) {
	tests := []struct {
		name    string
		headers []string
		want    string
	}{
		{"plain", []string{"Bearer abc"}, "abc"},
		{"lower case scheme", []string{"bearer abc"}, "abc"},
		{"upper case scheme", []string{"BEARER abc"}, "abc"},
		{"extra spaces", []string{"Bearer   abc"}, "abc"},
		{"no header", nil, ""},
		{"two headers", []string{"Bearer abc", "Bearer abc"}, ""},
		{"basic scheme", []string{"Basic abc"}, ""},
		{"no credential", []string{"Bearer "}, ""},
		{"scheme only", []string{"Bearer"}, ""},
		{"two credentials", []string{"Bearer abc def"}, ""},
		{"no space", []string{"Bearerabc"}, ""},
		{"tab inside", []string{"Bearer a\tb"}, ""},
		{"non-ASCII", []string{"Bearer ab\u00e9"}, ""},
		{"too long", []string{"Bearer " + strings.Repeat("a", 5000)}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.headers {
				h.Add("Authorization", v)
			}
			got, err := nmauth.BearerToken(h)
			if got != tc.want || (err == nil) != (tc.want != "") {
				t.Fatalf("BearerToken = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestResealTOTPSecrets(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		f.addUser("alice", "correct horse battery")
		f.addUser("bob", "correct horse battery")
		secret, _ := f.enroll("alice", f.userToken("alice", "correct horse battery"))
		ctx := context.Background()
		before, _ := f.store.GetUser(ctx, "alice")

		rotated, err := nmauth.New(nmauth.Config{Store: f.store, Secrets: [][]byte{testSecret(2), testSecret(1)}, Now: f.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := rotated.Admin().ResealTOTPSecrets(ctx); n != 1 || err != nil {
			t.Fatalf("ResealTOTPSecrets = %d, %v; want 1 sealed", n, err)
		}
		if n, err := rotated.Admin().ResealTOTPSecrets(ctx); n != 0 || err != nil {
			t.Fatalf("second ResealTOTPSecrets = %d, %v; want 0", n, err)
		}
		after, _ := f.store.GetUser(ctx, "alice")
		if bytes.Equal(before.TOTPSecret, after.TOTPSecret) {
			t.Fatal("secret not sealed again")
		}
		// Only the new key is needed from now on.
		f.auth, _ = nmauth.New(nmauth.Config{Store: f.store, Secrets: [][]byte{testSecret(2)}, Now: f.clock.Now, Wire: w})
		f.srv.Config.Handler = f.auth.Handler()
		pre := f.preAuthToken("alice", "correct horse battery")
		wantStatus(t, f.verifyTOTP("alice", pre, f.code(secret, 0)), 200)
	})
}

// TestRevocationWithinOneSecond revokes twice in the same second with a
// login between: the token from that login must not survive the second
// revocation, although token times have one-second precision.
func TestRevocationWithinOneSecond(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		f.addUser("alice", "correct horse battery")
		ctx := context.Background()
		f.clock.Advance(5 * time.Second)
		if err := f.auth.Admin().SetUserPassword(ctx, "alice", "a new password!"); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(300 * time.Millisecond)
		tok := f.userToken("alice", "a new password!")
		if _, err := f.auth.CheckBearer(ctx, tok); err != nil {
			t.Fatalf("fresh token refused: %v", err)
		}
		f.clock.Advance(300 * time.Millisecond)
		if err := f.auth.Admin().DisableUser(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		if err := f.auth.Admin().EnableUser(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.auth.CheckBearer(ctx, tok); err == nil {
			t.Fatal("token minted before the disable survived it")
		}
		if _, err := f.auth.CheckBearer(ctx, f.userToken("alice", "a new password!")); err != nil {
			t.Fatalf("token minted after re-enabling refused: %v", err)
		}
	})
}

func TestDisableAndDeleteHost(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		ctx := context.Background()
		f.addHost(testHostIDs[0], "", "host-password-1")
		f.addHost(testHostIDs[1], "", "host-password-2")
		tokenOf := func(id, pw string) string {
			r := f.do("/api/hosts/adm/authenticate", "", map[string]string{"id": id, "password": pw})
			wantStatus(t, r, 200)
			return r.field(t, "authToken").(string)
		}
		h1, h2 := tokenOf(testHostIDs[0], "host-password-1"), tokenOf(testHostIDs[1], "host-password-2")
		if err := f.auth.Admin().DisableHost(ctx, testHostIDs[0]); err != nil {
			t.Fatal(err)
		}
		if _, err := f.auth.CheckBearer(ctx, h1); err == nil {
			t.Fatal("token of a disabled host accepted")
		}
		wantError(t, f.do("/api/hosts/adm/authenticate", "", map[string]string{"id": testHostIDs[0], "password": "host-password-1"}), 401)
		if f.events.count(nmauth.EventTokensRevoked) != 1 {
			t.Fatal("disabling a host not reported")
		}
		if err := f.auth.Admin().DeleteHost(ctx, testHostIDs[1]); err != nil {
			t.Fatal(err)
		}
		if _, err := f.auth.CheckBearer(ctx, h2); err == nil {
			t.Fatal("token of a deleted host accepted")
		}
		if err := f.auth.Admin().DisableHost(ctx, ""); !errors.Is(err, nmauth.ErrInvalidHost) {
			t.Fatalf("DisableHost(\"\") = %v", err)
		}
	})
}

func TestRecoveryCodeAtVerify(t *testing.T) {
	eachWire(t, func(t *testing.T, w nmauth.WireProfile) {
		f := newFixture(t, withWire(w))
		f.addUser("alice", "correct horse battery")
		_, codes := f.enroll("alice", f.userToken("alice", "correct horse battery"))

		pre := f.preAuthToken("alice", "correct horse battery")
		typed := strings.ToUpper(strings.ReplaceAll(codes[0], "-", " "))
		r := f.verifyTOTP("alice", pre, typed)
		wantStatus(t, r, 200)
		if left := r.field(t, "recoveryCodesLeft"); left != 9.0 {
			t.Fatalf("recoveryCodesLeft %v, want 9", left)
		}
		if n, _ := f.auth.Admin().RecoveryCodesLeft(context.Background(), "alice"); n != 9 {
			t.Fatalf("RecoveryCodesLeft = %d", n)
		}
		if f.events.count(nmauth.EventRecoveryCodeUsed) != 1 {
			t.Fatal("recovery code use not reported")
		}
		// Used once, it is gone.
		pre = f.preAuthToken("alice", "correct horse battery")
		wantError(t, f.verifyTOTP("alice", pre, codes[0]), 401)
		wantStatus(t, f.verifyTOTP("alice", pre, codes[1]), 200)
	})
}
