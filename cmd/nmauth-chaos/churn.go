package main

import (
	"math/rand/v2"
	"strconv"
	"time"
)

// revocationBound is how long after a revocation every replica must
// refuse the revoked token: nmauthd's status cache lifetime (2 s) and a
// margin for the request itself.
const revocationBound = 2500 * time.Millisecond

// churn revokes tokens of its own users in turn until stop, by logout,
// by disable and by a password change, and probes every replica with the
// revoked token once the bound has passed: each must refuse it. Every
// third turn it disables its host instead, once every replica grants
// the host's logins from its cache of machine credentials, and probes
// every replica with a login by the host's right secret and with its
// token: each must refuse both.
type churn struct {
	f         *fleet
	c         *client
	bin, dsn  string
	dir       string
	env       []string
	users     []string
	passwords map[string]string
	// host and hostSecret are the host that churn disables and enables.
	host, hostSecret string
	masterKey        string
	// revocations counts the revocations made, by kind.
	revocations map[string]int
	log         func(format string, args ...any)
}

func (ch *churn) run(rng *rand.Rand, stop <-chan struct{}) {
	kinds := []string{"logout", "disable", "password"}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-time.After(500 * time.Millisecond):
		}
		if i%3 == 2 {
			if !ch.disableHost(rng, stop) {
				return
			}
			continue
		}
		user := ch.users[i%len(ch.users)]
		kind := kinds[rng.IntN(len(kinds))]
		token := ch.login(rng, user)
		if token == "" {
			continue
		}
		// Every replica caches the token before it is revoked.
		for _, r := range ch.f.replicas {
			ch.c.call(r, record{Op: opWhoami, Right: true}, "GET", "/api/whoami", token, clientAddr(rng), nil)
		}
		if !ch.revoke(rng, kind, user, token, stop) {
			return
		}
		ch.revocations[kind]++
		ch.log("revoked by %s: %s's token …%s", kind, user, token[len(token)-8:])
		// The whole bound passes before the probes, even at the end of
		// the run: a probe sooner would test nothing the design promises.
		time.Sleep(revocationBound)
		for _, r := range ch.f.replicas {
			ch.c.call(r, record{Op: opRevokeProbe, Account: user + " after " + kind}, "GET", "/api/whoami", token, clientAddr(rng), nil)
		}
		if kind == "disable" {
			ch.until(stop, func() bool { return ch.admin(rng, user, "enable") })
		}
	}
}

// hostAddr is the one address the churn's host logs in from, so that its
// right logins are granted from each replica's cache once the address is
// known to the host.
const hostAddr = "10.78.0.1"

// hostProbeTries bounds how often a replica is probed with a disabled
// host's login until it answers 200 or 401.
const hostProbeTries = 25

// disableHost logs the churn's host in three times on every replica (the
// first login makes its address known and caches the host as its write
// leaves it, or the second reads the host with nothing to write and
// caches it; the third is granted from the cache),
// disables it through one replica, and once the bound has passed probes
// every replica with a login by its right secret and with a token it got:
// each must refuse both. It enables the host again; false if stop came
// first.
func (ch *churn) disableHost(rng *rand.Rand, stop <-chan struct{}) bool {
	body := map[string]string{"id": ch.host, "password": ch.hostSecret}
	token := ""
	for _, r := range ch.f.replicas {
		for range 3 {
			st, b := ch.c.call(r, record{Op: opHostLogin, Account: ch.host, Right: true}, "POST", "/api/hosts/adm/authenticate", "", hostAddr, body)
			if tok := field(b, "authToken"); st == 200 && tok != "" {
				token = tok
			}
		}
	}
	if !ch.until(stop, func() bool { return ch.hostAdmin(rng, "disable") }) {
		return false
	}
	ch.revocations["host disable"]++
	ch.log("disabled host %s", ch.host)
	time.Sleep(revocationBound)
	for _, r := range ch.f.replicas {
		// A replica in a fault answers 503 or not at all, which tells
		// nothing: its probe is sent again until it answers.
		for range hostProbeTries {
			st, _ := ch.c.call(r, record{Op: opHostRevokeProbe, Account: ch.host + " after disable"}, "POST", "/api/hosts/adm/authenticate", "", hostAddr, body)
			if st == 200 || st == 401 {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if token != "" {
			ch.c.call(r, record{Op: opRevokeProbe, Account: ch.host + " after disable"}, "GET", "/api/whoami", token, hostAddr, nil)
		}
	}
	return ch.until(stop, func() bool { return ch.hostAdmin(rng, "enable") })
}

// hostAdmin disables or enables the churn's host through a replica's
// admin route.
func (ch *churn) hostAdmin(rng *rand.Rand, action string) bool {
	st, _ := ch.c.call(ch.f.replica(rng), record{Op: opAdmin, Account: ch.host, Right: true}, "POST",
		"/api/admin/hosts/"+ch.host+"/"+action, ch.masterKey, clientAddr(rng), nil)
	return st == 200
}

// login logs user in with its current password on some replica; "" when
// no token came back (a fault, a throttle).
func (ch *churn) login(rng *rand.Rand, user string) string {
	st, body := ch.c.call(ch.f.replica(rng), record{Op: opUserLogin, Account: user, Right: true}, "POST",
		"/api/users/adm/authenticate", "", clientAddr(rng), map[string]string{"username": user, "password": ch.passwords[user]})
	if st != 200 {
		return ""
	}
	return field(body, "authToken")
}

// revoke revokes token by kind, trying again until it is done; false if
// stop came first.
func (ch *churn) revoke(rng *rand.Rand, kind, user, token string, stop <-chan struct{}) bool {
	switch kind {
	case "logout":
		return ch.until(stop, func() bool {
			st, _ := ch.c.call(ch.f.replica(rng), record{Op: opLogout, Account: user, Right: true}, "POST",
				"/api/v1/users/logout", token, clientAddr(rng), nil)
			// A 401 is a logout whose answer an earlier try lost.
			return st == 200 || st == 401
		})
	case "disable":
		return ch.until(stop, func() bool { return ch.admin(rng, user, "disable") })
	default:
		next := "churn-password-" + strconv.Itoa(rng.IntN(1e9))
		// The command is tried until it succeeds, so the password is the
		// new one whatever an earlier failed try did.
		ok := ch.until(stop, func() bool {
			_, err := runAdmin(ch.bin, ch.dsn, ch.dir, ch.env, next+"\n", "user", "passwd", user)
			return err == nil
		})
		if ok {
			ch.passwords[user] = next
		}
		return ok
	}
}

// admin disables or enables user through a replica's admin route.
func (ch *churn) admin(rng *rand.Rand, user, action string) bool {
	st, _ := ch.c.call(ch.f.replica(rng), record{Op: opAdmin, Account: user, Right: true}, "POST",
		"/api/admin/users/"+user+"/"+action, ch.masterKey, clientAddr(rng), nil)
	return st == 200
}

// until calls try every 200 ms until it succeeds or stop comes.
func (ch *churn) until(stop <-chan struct{}, try func() bool) bool {
	for !try() {
		select {
		case <-stop:
			return false
		case <-time.After(200 * time.Millisecond):
		}
	}
	return true
}
