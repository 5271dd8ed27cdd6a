package nmauth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

// The TOTP attempt policy as docs/security.md documents it: a user's first 4
// consecutive wrong codes cost nothing, the 5th makes the user wait 1 s,
// and each further one doubles the wait up to 15 minutes, whatever
// pre-auth token the codes come with. A pre-auth token lives 5 minutes.
const (
	policyFreeFailures = 4
	policyFirstDelay   = time.Second
	policyMaxDelay     = 15 * time.Minute
	policyPreAuthTTL   = 5 * time.Minute

	// policyValidCodes is how many of the codeSpace codes verify-totp
	// takes at any moment: those of steps T-1, T and T+1.
	policyValidCodes = 3
	codeSpace        = 1_000_000
)

const (
	victim         = "victim"
	victimPassword = "correct horse battery"

	// attackStep is how far the attacker's clock moves between a guess
	// that was answered and the next: no real client is faster.
	attackStep = time.Millisecond
)

// policyDelay is the documented wait after n consecutive wrong codes.
func policyDelay(n int) time.Duration {
	if n <= policyFreeFailures {
		return 0
	}
	d := policyFirstDelay
	for i := policyFreeFailures + 1; i < n && d < policyMaxDelay; i++ {
		d *= 2
	}
	return min(d, policyMaxDelay)
}

// warmUpGuesses is how many wrong codes an attacker makes before the wait
// after each reaches its cap: those followed by a shorter wait, and the
// first one followed by the cap.
func warmUpGuesses() int {
	n := 1
	for policyDelay(n) < policyMaxDelay {
		n++
	}
	return n
}

// maxGuessesIn is the most wrong codes the policy evaluates within w:
// the warm-up, then one per full wait at the cap.
func maxGuessesIn(w time.Duration) int {
	return warmUpGuesses() + int(w/policyMaxDelay)
}

// newVictim returns a fixture with one user who has TOTP on, and the
// user's TOTP secret. Every call builds the same state at the same time.
func newVictim(t *testing.T) (*fixture, string) {
	t.Helper()
	f := newFixture(t)
	f.addUser(victim, victimPassword)
	ctx := context.Background()
	master := nmauth.Principal{Kind: nmauth.KindMaster}
	e, err := f.auth.InitTOTP(ctx, master, victim)
	if err != nil {
		t.Fatal(err)
	}
	secret := secretOf(t, e.URL)
	if _, err := f.auth.CompleteTOTP(ctx, master, victim, e.URL, e.Signature, f.code(secret, 0), ""); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(30 * time.Second) // past the step just used
	return f, secret
}

// wrongCode returns the next code of a counting sequence that is none of
// the codes valid now, computed independently of the package.
func (f *fixture) wrongCode(secret string, next *int) string {
	f.t.Helper()
	valid := []string{f.code(secret, -30*time.Second), f.code(secret, 0), f.code(secret, 30*time.Second)}
	for {
		c := fmt.Sprintf("%06d", *next%codeSpace)
		*next++
		if !slices.Contains(valid, c) {
			return c
		}
	}
}

// attackOutcome is what verify-totp did with one guess.
type attackOutcome string

const (
	guessEvaluated attackOutcome = "evaluated" // a wrong code, counted
	guessThrottled attackOutcome = "throttled" // 429, not looked at
	tokenRefused   attackOutcome = "refused"   // pre-auth token spent or expired
)

type attackEvent struct {
	at      time.Duration // since the attack began
	outcome attackOutcome
}

type attackResult struct {
	trace                        []attackEvent
	evaluated, throttled, logins int
}

// runTOTPAttack plays an attacker who knows the victim's password and
// sends wrong codes as fast as the server lets it for window: on 429 it
// waits exactly the Retry-After it was given, after any other answer it
// waits attackStep, and it gets a new pre-auth token from login whenever
// its token is refused.
func runTOTPAttack(t *testing.T, f *fixture, secret string, window time.Duration, login func() string) attackResult {
	t.Helper()
	ctx := context.Background()
	start := f.clock.Now()
	end := start.Add(window)
	var res attackResult
	token, fresh, next := "", false, 0
	// The policy gives about three answers per guess; far more means the
	// attacker is guessing much faster than it allows, and the bound
	// checks of the caller say by how much.
	limit := 20 * maxGuessesIn(window)
	for !f.clock.Now().After(end) {
		if len(res.trace) >= limit {
			t.Errorf("attack stopped after %d answers at %s of %s", len(res.trace), f.clock.Now().Sub(start), window)
			break
		}
		if token == "" {
			token, fresh = login(), true
			res.logins++
		}
		_, err := f.auth.VerifyTOTP(ctx, token, victim, f.wrongCode(secret, &next))
		// The fixture's clock moves a microsecond per read, and a real login
		// reads it more often than a minted token: compare to the millisecond.
		ev := attackEvent{at: f.clock.Now().Sub(start).Truncate(time.Millisecond)}
		var throttled *nmauth.RetryError
		switch {
		case err == nil:
			t.Fatalf("a wrong code was accepted at %s", ev.at)
		case errors.Is(err, nmauth.ErrInvalidCode):
			ev.outcome = guessEvaluated
			res.evaluated++
			f.clock.Advance(attackStep)
		case errors.As(err, &throttled):
			if throttled.RetryAfter <= 0 || throttled.RetryAfter > policyMaxDelay {
				t.Fatalf("429 with Retry-After %s", throttled.RetryAfter)
			}
			ev.outcome = guessThrottled
			res.throttled++
			f.clock.Advance(throttled.RetryAfter)
		case errors.Is(err, nmauth.ErrUnauthenticated):
			if fresh {
				t.Fatalf("a fresh pre-auth token was refused at %s", ev.at)
			}
			ev.outcome = tokenRefused
			token = ""
		default:
			t.Fatalf("unexpected error at %s: %v", ev.at, err)
		}
		fresh = false
		res.trace = append(res.trace, ev)
	}
	return res
}

// firstDifference returns the first index at which a and b differ, or -1.
func firstDifference(a, b []attackEvent) int {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return -1
}

func eventAt(tr []attackEvent, i int) string {
	if i >= len(tr) {
		return "none"
	}
	return fmt.Sprintf("%s at %s", tr[i].outcome, tr[i].at)
}

// loginFor returns pre-auth tokens from the victim's real login.
func loginFor(t *testing.T, f *fixture) func() string {
	return func() string {
		t.Helper()
		out, err := f.auth.LoginUser(context.Background(), victim, victimPassword)
		if err != nil || !out.TOTPRequired || out.PreAuthToken == "" {
			t.Fatalf("login = %+v, %v", out, err)
		}
		return out.PreAuthToken
	}
}

// mintedFor returns pre-auth tokens made as a login makes them (a token
// of the documented lifetime, its id recorded as the one to redeem, the
// per-token count reset) without running argon2id each time. The attack
// over 30 days needs one token per guess once the wait exceeds a token's
// lifetime, thousands of logins; TestTOTPBruteForceThirtyDays shows that
// minted tokens give the attacker exactly what real logins give.
func mintedFor(t *testing.T, f *fixture) func() string {
	fg := newForger(t, testSecret(1))
	fg.gen = func(_, sub string) uint64 {
		u, err := f.store.GetUser(context.Background(), sub)
		if err != nil {
			t.Fatal(err)
		}
		return nmauth.StateOf(&u.State).Generation
	}
	return func() string {
		t.Helper()
		c := fg.claims(audPreAuth, victim, f.clock.Now(), policyPreAuthTTL)
		tok := fg.sign(t, audPreAuth, c)
		err := f.store.UpdateUser(context.Background(), victim, func(u *nmauth.User) error {
			nmauth.StateOf(&u.State).PreAuthID, nmauth.StateOf(&u.State).PreAuthFailures = c["jti"].(string), 0
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
}

// TestTOTPBruteForceThirtyDays runs an attacker who knows the password
// against the second factor at full speed for 30 simulated days, and
// checks that the guesses evaluated stay within what the documented
// policy allows and that the expected time to break the second factor is
// at least 5 years.
func TestTOTPBruteForceThirtyDays(t *testing.T) {
	const window = 30 * 24 * time.Hour
	// Real logins for the first hours, through the warm-up and well into
	// the cap, where every guess needs a new token.
	const realWindow = 4 * time.Hour

	fr, secretR := newVictim(t)
	viaLogin := runTOTPAttack(t, fr, secretR, realWindow, loginFor(t, fr))

	f, secret := newVictim(t)
	res := runTOTPAttack(t, f, secret, window, mintedFor(t, f))

	// Minted tokens behave as real ones: the attack with them sees the
	// same answers at the same moments.
	var prefix []attackEvent
	for _, ev := range res.trace {
		if ev.at <= realWindow {
			prefix = append(prefix, ev)
		}
	}
	if i := firstDifference(prefix, viaLogin.trace); i >= 0 {
		t.Errorf("answer %d differs between minted tokens and real logins: %v vs %v", i, eventAt(prefix, i), eventAt(viaLogin.trace, i))
	}

	bound := maxGuessesIn(window)
	if res.evaluated > bound {
		t.Errorf("%d guesses evaluated in 30 days, policy allows at most %d", res.evaluated, bound)
	}
	// The wait never exceeds its cap: the owner is never shut out longer
	// than documented, and the attacker really ran at full speed.
	if floor := int(window / policyMaxDelay); res.evaluated < floor {
		t.Errorf("%d guesses evaluated in 30 days, fewer than one per %s (%d)", res.evaluated, policyMaxDelay, floor)
	}
	u, err := f.store.GetUser(context.Background(), victim)
	if err != nil {
		t.Fatal(err)
	}
	if nmauth.StateOf(&u.State).TOTPFailures != res.evaluated {
		t.Errorf("store counts %d consecutive failures, the attacker made %d", nmauth.StateOf(&u.State).TOTPFailures, res.evaluated)
	}

	rate := float64(res.evaluated) / window.Hours() // guesses per hour
	years := float64(codeSpace) / policyValidCodes / rate / (24 * 365.25)
	t.Logf("30 days: %d guesses evaluated (policy bound %d), %d answered 429, %d pre-auth tokens; %.1f guesses a day",
		res.evaluated, bound, res.throttled, res.logins, rate*24)
	t.Logf("expected time to break the second factor: %.2f years", years)
	t.Logf("first %s with real logins: %d guesses evaluated, %d logins", realWindow, viaLogin.evaluated, viaLogin.logins)
	if years < 5 {
		t.Errorf("expected time to break the second factor is %.2f years, want at least 5", years)
	}
}

// TestRightCodeDuringTOTPBackoff checks that while a user backs off,
// verify-totp answers 429 with Retry-After even for the right code, that
// the code is not spent, and that it works once the wait is over. The
// failures are spread over several pre-auth tokens, as the backoff
// follows the user, not the token.
func TestRightCodeDuringTOTPBackoff(t *testing.T) {
	for _, failures := range []int{policyFreeFailures + 1, policyFreeFailures + 2, warmUpGuesses()} {
		t.Run(strconv.Itoa(failures), func(t *testing.T) {
			f, secret := newVictim(t)
			ctx := context.Background()
			pre, next := "", 0
			for n := 0; n < failures; {
				if pre == "" || n%3 == 0 { // a new token every 3 guesses
					pre = f.preAuthToken(victim, victimPassword)
				}
				r := f.verifyTOTP(victim, pre, f.wrongCode(secret, &next))
				switch r.status {
				case http.StatusUnauthorized:
					n++
					if u, _ := f.store.GetUser(ctx, victim); nmauth.StateOf(&u.State).TOTPFailures != n {
						t.Fatalf("after %d wrong codes the store counts %d", n, nmauth.StateOf(&u.State).TOTPFailures)
					}
				case http.StatusTooManyRequests:
					s, _ := strconv.Atoi(r.header.Get("Retry-After"))
					f.clock.Advance(time.Duration(s) * time.Second)
					pre = ""
				default:
					t.Fatalf("wrong code: %d %s", r.status, r.body)
				}
			}
			pre = f.preAuthToken(victim, victimPassword)
			before, _ := f.store.GetUser(ctx, victim)

			r := f.verifyTOTP(victim, pre, f.code(secret, 0))
			wantError(t, r, http.StatusTooManyRequests)
			wait := policyDelay(failures)
			if got := r.header.Get("Retry-After"); got != strconv.Itoa(int(wait/time.Second)) {
				t.Fatalf("Retry-After %q after %d failures, want %d", got, failures, int(wait/time.Second))
			}
			if after, _ := f.store.GetUser(ctx, victim); !reflect.DeepEqual(after, before) {
				t.Fatalf("the refused code changed the user:\nbefore %+v\nafter  %+v", before, after)
			}

			f.clock.Advance(wait)
			if wait >= policyPreAuthTTL {
				pre = f.preAuthToken(victim, victimPassword)
			}
			wantStatus(t, f.verifyTOTP(victim, pre, f.code(secret, 0)), http.StatusOK)
			if u, _ := f.store.GetUser(ctx, victim); nmauth.StateOf(&u.State).TOTPFailures != 0 || !nmauth.StateOf(&u.State).TOTPBlockedUntil.IsZero() {
				t.Fatalf("after the right code: %d failures, blocked until %s", nmauth.StateOf(&u.State).TOTPFailures, nmauth.StateOf(&u.State).TOTPBlockedUntil)
			}
		})
	}
}
