package main

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

// op names the kind of a request.
type op string

const (
	opHostLogin   op = "host login"
	opUserLogin   op = "user login"
	opVerifyTOTP  op = "verify-totp"
	opWhoami      op = "whoami"
	opLogout      op = "logout"
	opAdmin       op = "admin"
	opRevokeProbe op = "revocation probe"
	// opHostRevokeProbe is a login by a disabled host's right secret.
	opHostRevokeProbe op = "host revocation probe"
)

// record is one request as the harness saw it.
type record struct {
	At         time.Time
	Replica    int
	Op         op
	Account    string
	Right      bool // the credential sent was right when sent
	Status     int  // 0: no answer (the replica was down or the connection broke)
	RetryAfter string
	Took       time.Duration
	Err        string
	// Step is the TOTP step a verify-totp code was computed for.
	Step int64
	// Replay marks a verify-totp that sends a code already accepted.
	Replay bool
}

// recorder keeps every record.
type recorder struct {
	mu      sync.Mutex
	records []record
}

func (r *recorder) add(rec record) {
	r.mu.Lock()
	r.records = append(r.records, rec)
	r.mu.Unlock()
}

func (r *recorder) all() []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]record(nil), r.records...)
}

// client sends the harness's requests, each from a client address of its
// own through the replicas' trusted X-Forwarded-For.
type client struct {
	http *http.Client
	rec  *recorder
}

// call sends one request to replica r and records it, as rec describes
// it. It returns the status (0 for none) and the body.
func (c *client) call(r *replica, rec record, method, path, bearer, from string, body any) (int, []byte) {
	rec.At, rec.Replica = time.Now(), r.id
	base := r.base()
	if base == "" {
		rec.Err = "replica down"
		c.rec.add(rec)
		return 0, nil
	}
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, base+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	req.Header.Set("X-Forwarded-For", from)
	resp, err := c.http.Do(req)
	rec.Took = time.Since(rec.At)
	if err != nil {
		rec.Err = err.Error()
		c.rec.add(rec)
		return 0, nil
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	rec.Took = time.Since(rec.At)
	rec.Status, rec.RetryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
	c.rec.add(rec)
	return rec.Status, b
}

// field reads a string of an answer: the envelope's response, or the
// bare object of init-totp and verify-totp.
func field(body []byte, name string) string {
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	if resp, ok := m["response"].(map[string]any); ok {
		m = resp
	}
	s, _ := m[name].(string)
	return s
}

// clientAddr is the address a worker's request comes from: one of 4,096.
func clientAddr(rng *rand.Rand) string {
	n := rng.IntN(4096)
	return "10.77." + strconv.Itoa(n/256) + "." + strconv.Itoa(n%256)
}

// code computes a TOTP code of secret for step with pquerna/otp, not with
// the code under test.
func code(secret string, step int64) string {
	c, err := totp.GenerateCodeCustom(secret, time.Unix(step*30, 0), totp.ValidateOpts{
		Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1,
	})
	if err != nil {
		panic(err)
	}
	return c
}

func stepAt(t time.Time) int64 { return t.Unix() / 30 }

// fleet is what the load knows: the accounts and their secrets.
type fleet struct {
	replicas []*replica
	hosts    map[string]string // stable hosts: id → secret
	hostIDs  []string
	targets  []string          // hosts that only ever get wrong secrets
	users    map[string]string // stable users without TOTP
	userIDs  []string
	totp     map[string]string // TOTP users: name → password
	secrets  map[string]string // TOTP users: name → TOTP secret
	password string            // the password of every TOTP user
}

func (f *fleet) replica(rng *rand.Rand) *replica { return f.replicas[rng.IntN(len(f.replicas))] }

// steadyWorker sends the bulk of the load until stop: host logins right
// and wrong, user logins, and whoami with the tokens it got.
func (f *fleet) steadyWorker(c *client, rng *rand.Rand, stop <-chan struct{}) {
	var tokens []string
	for {
		select {
		case <-stop:
			return
		default:
		}
		from := clientAddr(rng)
		switch p := rng.IntN(100); {
		case p < 50:
			id := f.hostIDs[rng.IntN(len(f.hostIDs))]
			st, body := c.call(f.replica(rng), record{Op: opHostLogin, Account: id, Right: true}, "POST", "/api/hosts/adm/authenticate", "", from,
				map[string]string{"id": id, "password": f.hosts[id]})
			if tok := field(body, "authToken"); st == 200 && tok != "" && len(tokens) < 64 {
				tokens = append(tokens, tok)
			}
		case p < 65:
			id := f.targets[rng.IntN(len(f.targets))]
			c.call(f.replica(rng), record{Op: opHostLogin, Account: id}, "POST", "/api/hosts/adm/authenticate", "", from,
				map[string]string{"id": id, "password": "wrong-" + strconv.Itoa(rng.IntN(1e9))})
		case p < 67:
			name := f.userIDs[rng.IntN(len(f.userIDs))]
			c.call(f.replica(rng), record{Op: opUserLogin, Account: name, Right: true}, "POST", "/api/users/adm/authenticate", "", from,
				map[string]string{"username": name, "password": f.users[name]})
		case len(tokens) > 0:
			c.call(f.replica(rng), record{Op: opWhoami, Right: true}, "GET", "/api/whoami", tokens[rng.IntN(len(tokens))], from, nil)
		}
		time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
	}
}

// totpWorker logs one TOTP user in again and again until stop, each
// time with the code of a step not used yet, and after each success
// sends the same code once more, which must be refused.
//
// last is the step of the code the user's enrollment used.
func (f *fleet) totpWorker(c *client, rng *rand.Rand, name string, last int64, stop <-chan struct{}) {
	for {
		step := stepAt(time.Now())
		if step == last {
			select {
			case <-stop:
				return
			case <-time.After(time.Until(time.Unix((step+1)*30, 0))):
			}
			continue
		}
		switch st := f.verify(c, rng, name, step, false); {
		case st == 200:
			last = step
			f.verify(c, rng, name, step, true)
		case st == 0 || st >= 500:
			// The server may have taken the code before the answer was
			// lost: the step is not tried again.
			last = step
		}
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(200+rng.IntN(300)) * time.Millisecond):
		}
	}
}

// verify logs name in with the password on one replica and answers the
// second factor with the code of step on another. It returns the status
// of the answer to the code, -1 when the login gave no pre-auth token.
func (f *fleet) verify(c *client, rng *rand.Rand, name string, step int64, replay bool) int {
	from := clientAddr(rng)
	st, body := c.call(f.replica(rng), record{Op: opUserLogin, Account: name, Right: true}, "POST", "/api/users/adm/authenticate", "", from,
		map[string]string{"username": name, "password": f.password})
	preAuth := field(body, "preAuthToken")
	if st != 200 || preAuth == "" {
		return -1
	}
	st, _ = c.call(f.replica(rng), record{Op: opVerifyTOTP, Account: name, Right: !replay, Step: step, Replay: replay},
		"POST", "/api/users/"+name+"/auth/verify-totp", preAuth, from, map[string]string{"totp": code(f.secrets[name], step)})
	return st
}
