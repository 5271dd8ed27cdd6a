package tests_test

import (
	"context"
	"net/http"
	"reflect"
	"testing"

	"github.com/nmauth/nmauth"
	nmstate "github.com/nmauth/nmauth/internal/state"
	"github.com/nmauth/nmauth/passkey"
)

// The attack suite: answers made wrong in one way each, by a software
// authenticator that can write any byte, must each be refused with a
// clear 4xx and change nothing: no token, no passkey stored or touched,
// no sign count moved. A second factor's refusal of a checked assertion is
// counted against the attempt limits, as a wrong code is, and that is all
// it changes.

// state is what an attack must not change: the passkey records and the
// account records of the users.
type state struct {
	records map[string]passkey.Record
	users   map[string]nmauth.User
}

func (h *harness) state(names ...string) state {
	h.t.Helper()
	s := state{records: map[string]passkey.Record{}, users: map[string]nmauth.User{}}
	for _, name := range names {
		s.records[name] = h.record(name)
		u, err := h.users.GetUser(context.Background(), name)
		if err != nil {
			h.t.Fatal(err)
		}
		s.users[name] = u
	}
	return s
}

// counted is before with one second-factor failure of name counted.
func (s state) counted(name string) state {
	users := map[string]nmauth.User{}
	for k, u := range s.users {
		users[k] = u
	}
	u := users[name]
	nmstate.Edit(&u.State, func(s *nmstate.User) { s.TOTPFailures++; s.PreAuthFailures++ })
	users[name] = u
	return state{records: s.records, users: users}
}

func wantSame(t *testing.T, want, got state) {
	t.Helper()
	if !reflect.DeepEqual(want.records, got.records) {
		t.Errorf("passkeys changed:\n want %+v\n got  %+v", want.records, got.records)
	}
	if !reflect.DeepEqual(want.users, got.users) {
		t.Errorf("accounts changed:\n want %+v\n got  %+v", want.users, got.users)
	}
}

// pair is alice and bob, each with a passkey registered while
// passwordless login is on and used once, so that its sign count is past
// zero.
type pair struct {
	h      *harness
	ka, kb *softKey
}

func newPair(t *testing.T, store passkey.Store) pair {
	t.Helper()
	h := newHarness(t, options{store: store, passwordless: true})
	p := pair{h: h, ka: newSoftKey(t), kb: newSoftKey(t)}
	for name, k := range map[string]*softKey{"alice": p.ka, "bob": p.kb} {
		h.addUser(name)
		h.register(name, h.userToken(name), "key of "+name, k)
		wantStatus(t, h.finishPasswordless(k.get(t, assertion(h.beginPasswordless(), k))), http.StatusOK)
	}
	return p
}

// TestAttacksOnPasswordlessLogin refuses each wrong answer to a
// passwordless login's challenge, over every Store.
func TestAttacksOnPasswordlessLogin(t *testing.T) {
	cases := []struct {
		name   string
		status int
		answer func(t *testing.T, p pair) []byte
	}{
		{"an origin not configured", http.StatusUnauthorized, func(t *testing.T, p pair) []byte {
			c := assertion(p.h.beginPasswordless(), p.ka)
			c.origin = evilOrigin
			return p.ka.get(t, c)
		}},
		{"another relying party", http.StatusUnauthorized, func(t *testing.T, p pair) []byte {
			c := assertion(p.h.beginPasswordless(), p.ka)
			c.rpID = evilRPID
			return p.ka.get(t, c)
		}},
		{"no user verification", http.StatusUnauthorized, func(t *testing.T, p pair) []byte {
			c := assertion(p.h.beginPasswordless(), p.ka)
			c.flags = flagUP
			return p.ka.get(t, c)
		}},
		{"no user presence", http.StatusUnauthorized, func(t *testing.T, p pair) []byte {
			c := assertion(p.h.beginPasswordless(), p.ka)
			c.flags = flagUV
			return p.ka.get(t, c)
		}},
		{"a cloned authenticator's sign count", http.StatusUnauthorized, func(t *testing.T, p pair) []byte {
			c := assertion(p.h.beginPasswordless(), p.ka)
			c.count = 0 // the clone's counter, behind the one stored
			return p.ka.get(t, c)
		}},
		{"a forged signature", http.StatusUnauthorized, func(t *testing.T, p pair) []byte {
			c := assertion(p.h.beginPasswordless(), p.ka)
			c.forge = true
			return p.ka.get(t, c)
		}},
		{"a registration's client data", http.StatusUnauthorized, func(t *testing.T, p pair) []byte {
			c := assertion(p.h.beginPasswordless(), p.ka)
			c.typ = "webauthn.create"
			return p.ka.get(t, c)
		}},
		{"no user handle", http.StatusUnauthorized, func(t *testing.T, p pair) []byte {
			c := assertion(p.h.beginPasswordless(), p.ka)
			c.userHandle = nil
			return p.ka.get(t, c)
		}},
		{"another user's handle", http.StatusUnauthorized, func(t *testing.T, p pair) []byte {
			c := assertion(p.h.beginPasswordless(), p.kb)
			c.userHandle = p.ka.handle // bob's passkey claims to be alice's
			return p.kb.get(t, c)
		}},
		{"a passkey nobody registered", http.StatusUnauthorized, func(t *testing.T, p pair) []byte {
			stranger := newSoftKey(t)
			stranger.handle = p.ka.handle
			return stranger.get(t, assertion(p.h.beginPasswordless(), stranger))
		}},
		{"an unknown challenge", http.StatusBadRequest, func(t *testing.T, p pair) []byte {
			c := assertion(p.h.beginPasswordless(), p.ka)
			c.challenge = b64([]byte("a challenge this server never made"))
			return p.ka.get(t, c)
		}},
		{"an expired challenge", http.StatusBadRequest, func(t *testing.T, p pair) []byte {
			c := assertion(p.h.beginPasswordless(), p.ka)
			p.h.clock.Advance(challengeTTL)
			return p.ka.get(t, c)
		}},
		{"a registration's challenge", http.StatusBadRequest, func(t *testing.T, p pair) []byte {
			tok, err := p.h.ext.LoginVerified(context.Background(), "alice")
			if err != nil {
				t.Fatal(err)
			}
			reg, _ := p.h.beginRegistration("alice", tok.AuthToken, "another")
			c := assertion(map[string]any{"challenge": reg.challenge, "rpId": testRPID}, p.ka)
			return p.ka.get(t, c)
		}},
	}
	eachBackend(t, func(t *testing.T, b backend) {
		store, _ := b.fresh(t)
		p := newPair(t, store(t))
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				before := p.h.state("alice", "bob")
				answer := tc.answer(t, p)
				r := p.h.finishPasswordless(answer)
				wantError(t, r, tc.status)
				wantSame(t, before, p.h.state("alice", "bob"))
				// The challenge is spent by the refusal: the same answer
				// again is a used challenge, whatever else is wrong with it.
				wantError(t, p.h.finishPasswordless(answer), http.StatusBadRequest)
			})
		}
		// After every refusal, the right answer still logs alice in.
		r := p.h.finishPasswordless(p.ka.get(t, assertion(p.h.beginPasswordless(), p.ka)))
		wantStatus(t, r, http.StatusOK)
		if pr, err := p.h.principal(r.token(t)); err != nil || pr.Name != "alice" || !pr.TOTP {
			t.Fatalf("the passwordless token checks as %+v, %v", pr, err)
		}
		if n := p.h.events.count(passkey.EventSignCountRegressed); n != 1 {
			t.Errorf("%d %s events, want 1", n, passkey.EventSignCountRegressed)
		}
	})
}

// TestReplayedAssertion refuses an assertion that logged in once, and
// changes nothing: its sign count stays where the first use put it.
func TestReplayedAssertion(t *testing.T) {
	p := newPair(t, passkey.NewMemoryStore())
	answer := p.ka.get(t, assertion(p.h.beginPasswordless(), p.ka))
	wantStatus(t, p.h.finishPasswordless(answer), http.StatusOK)
	before := p.h.state("alice", "bob")
	wantError(t, p.h.finishPasswordless(answer), http.StatusBadRequest)
	wantSame(t, before, p.h.state("alice", "bob"))
}

// TestAttacksOnTheSecondFactor refuses wrong answers to a second factor's
// challenge. A checked assertion that fails counts as a wrong code; a
// challenge that is not this login's counts nothing.
func TestAttacksOnTheSecondFactor(t *testing.T) {
	cases := []struct {
		name    string
		status  int
		counted bool
		answer  func(t *testing.T, p pair, pre string) []byte
	}{
		{"an origin not configured", http.StatusUnauthorized, true, func(t *testing.T, p pair, pre string) []byte {
			c := assertion(p.h.beginSecondFactor("alice", pre), p.ka)
			c.origin = evilOrigin
			return p.ka.get(t, c)
		}},
		{"another relying party", http.StatusUnauthorized, true, func(t *testing.T, p pair, pre string) []byte {
			c := assertion(p.h.beginSecondFactor("alice", pre), p.ka)
			c.rpID = evilRPID
			return p.ka.get(t, c)
		}},
		{"a cloned authenticator's sign count", http.StatusUnauthorized, true, func(t *testing.T, p pair, pre string) []byte {
			c := assertion(p.h.beginSecondFactor("alice", pre), p.ka)
			c.count = p.h.record("alice").Passkeys[0].SignCount // not above the stored one
			return p.ka.get(t, c)
		}},
		{"a forged signature", http.StatusUnauthorized, true, func(t *testing.T, p pair, pre string) []byte {
			c := assertion(p.h.beginSecondFactor("alice", pre), p.ka)
			c.forge = true
			return p.ka.get(t, c)
		}},
		{"another user's passkey", http.StatusUnauthorized, true, func(t *testing.T, p pair, pre string) []byte {
			return p.kb.get(t, assertion(p.h.beginSecondFactor("alice", pre), p.kb))
		}},
		{"another user's challenge", http.StatusBadRequest, false, func(t *testing.T, p pair, pre string) []byte {
			bobs, _ := p.h.passwordLogin("bob")
			return p.ka.get(t, assertion(p.h.beginSecondFactor("bob", bobs), p.ka))
		}},
		{"a passwordless login's challenge", http.StatusBadRequest, false, func(t *testing.T, p pair, pre string) []byte {
			return p.ka.get(t, assertion(p.h.beginPasswordless(), p.ka))
		}},
		{"an expired challenge", http.StatusBadRequest, false, func(t *testing.T, p pair, pre string) []byte {
			c := assertion(p.h.beginSecondFactor("alice", pre), p.ka)
			p.h.clock.Advance(challengeTTL)
			return p.ka.get(t, c)
		}},
	}
	eachBackend(t, func(t *testing.T, b backend) {
		store, _ := b.fresh(t)
		p := newPair(t, store(t))
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				pre, isPre := p.h.passwordLogin("alice")
				if !isPre {
					t.Fatal("alice's password login asked for no second factor")
				}
				before := p.h.state("alice", "bob")
				r := p.h.finishSecondFactor("alice", pre, tc.answer(t, p, pre))
				wantError(t, r, tc.status)
				after := p.h.state("alice", "bob")
				after.users["bob"] = before.users["bob"] // bob's own login may run in the case
				if tc.counted {
					before = before.counted("alice")
				}
				wantSame(t, before, after)
				// The right answer still logs alice in, and clears the
				// count, so each case is refused for its own fault.
				pre, _ = p.h.passwordLogin("alice")
				wantStatus(t, p.h.finishSecondFactor("alice", pre, p.ka.get(t, assertion(p.h.beginSecondFactor("alice", pre), p.ka))), http.StatusOK)
			})
		}
	})
}

// TestAttacksOnRegistration refuses wrong answers to a registration's
// challenge, storing nothing, and a registration on another user's behalf.
func TestAttacksOnRegistration(t *testing.T) {
	cases := []struct {
		name   string
		status int
		edit   func(c *ceremony)
	}{
		{"an origin not configured", http.StatusBadRequest, func(c *ceremony) { c.origin = evilOrigin }},
		{"another relying party", http.StatusBadRequest, func(c *ceremony) { c.rpID = evilRPID }},
		{"no user verification, with passwordless on", http.StatusBadRequest, func(c *ceremony) { c.flags = flagUP | flagAT }},
		{"an assertion's client data", http.StatusBadRequest, func(c *ceremony) { c.typ = "webauthn.get" }},
		{"an unknown challenge", http.StatusBadRequest, func(c *ceremony) { c.challenge = b64([]byte("a challenge this server never made")) }},
	}
	h := newHarness(t, options{passwordless: true})
	h.addUser("alice")
	h.addUser("bob")
	tok, err := h.ext.Login(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := h.state("alice")
			c, _ := h.beginRegistration("alice", tok.AuthToken, "laptop")
			tc.edit(&c)
			wantError(t, h.post("/api/users/alice/passkeys/register/finish", tok.AuthToken, newSoftKey(t).create(t, c)), tc.status)
			wantSame(t, before, h.state("alice"))
		})
	}
	t.Run("another user's token", func(t *testing.T) {
		bobs := h.userToken("bob")
		before := h.state("alice", "bob")
		wantError(t, h.post("/api/users/alice/passkeys/register/begin", bobs, map[string]string{"name": "x"}), http.StatusForbidden)
		c, _ := h.beginRegistration("alice", tok.AuthToken, "laptop")
		wantError(t, h.post("/api/users/alice/passkeys/register/finish", bobs, newSoftKey(t).create(t, c)), http.StatusForbidden)
		wantError(t, h.post("/api/users/bob/passkeys/register/finish", bobs, newSoftKey(t).create(t, c)), http.StatusBadRequest)
		wantSame(t, before, h.state("alice", "bob"))
	})
	t.Run("a replayed registration", func(t *testing.T) {
		k := newSoftKey(t)
		c, _ := h.beginRegistration("alice", tok.AuthToken, "laptop")
		answer := k.create(t, c)
		wantStatus(t, h.post("/api/users/alice/passkeys/register/finish", tok.AuthToken, answer), http.StatusOK)
		// The first passkey revoked alice's tokens; her fresh one
		// replays the same answer.
		fresh, err := h.ext.LoginVerified(context.Background(), "alice")
		if err != nil {
			t.Fatal(err)
		}
		before := h.state("alice")
		wantError(t, h.post("/api/users/alice/passkeys/register/finish", fresh.AuthToken, answer), http.StatusBadRequest)
		wantSame(t, before, h.state("alice"))
	})
}
