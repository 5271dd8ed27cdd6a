package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nmauth/nmauth"
)

// fleetHostID names the i-th host of the fleet scenario.
func fleetHostID(prefix string, i int) string { return fmt.Sprintf("%s-%07d", prefix, i) }

// fleetHost is one host of the fleet scenario: the token it holds and when
// it logs in again.
type fleetHost struct {
	mu      sync.Mutex
	token   string
	renewAt time.Time
}

// fleet is the state of the fleet scenario: N hosts taken in turn, each of
// which logs in when it has no token or its token's lifetime is over, and
// otherwise calls whoami with its token. Host i keeps one source address,
// number i modulo -sources, as a real host keeps its own.
type fleet struct {
	a        *api
	prefix   string
	password string
	relogin  time.Duration
	hosts    []fleetHost
	next     atomic.Int64
	logins   atomic.Int64
	whoamis  atomic.Int64
}

func newFleet(a *api, o *options) (*fleet, error) {
	if o.fleetHosts < 1 || o.fleetPassword == "" {
		return nil, errors.New("needs -fleet-hosts and a host password (-fleet-password or NMAUTH_LOAD_FLEET_PASSWORD)")
	}
	return &fleet{a: a, prefix: o.fleetPrefix, password: o.fleetPassword, relogin: o.fleetRelogin, hosts: make([]fleetHost, o.fleetHosts)}, nil
}

// source returns the next request: the next host's login or its whoami.
// A host whose login is on its way calls whoami with its old token, or
// logs in too if it has none.
func (f *fleet) source(ctx context.Context) (*requestSpec, error) {
	i := int((f.next.Add(1) - 1) % int64(len(f.hosts)))
	h := &f.hosts[i]
	h.mu.Lock()
	token, now := h.token, time.Now()
	login := token == "" || !now.Before(h.renewAt)
	if login {
		h.renewAt = now.Add(f.relogin)
	}
	h.mu.Unlock()
	if !login {
		f.whoamis.Add(1)
		req, err := f.a.newRequest(ctx, http.MethodGet, "/api/whoami", token, nil)
		return &requestSpec{req: req, from: i}, err
	}
	f.logins.Add(1)
	id := fleetHostID(f.prefix, i)
	req, err := f.a.newRequest(ctx, http.MethodPost, "/api/hosts/adm/authenticate", "", hostAuthRequest{ID: id, Password: f.password})
	return &requestSpec{req: req, from: i, answered: func(ans answer) { f.keep(h, ans) }}, err
}

// keep stores the token of a host's successful login; a failed one is
// tried again at the host's next turn.
func (f *fleet) keep(h *fleetHost, ans answer) {
	var env envelope
	var out nmauth.HostLogin
	ok := ans.status == http.StatusOK && json.Unmarshal(ans.body, &env) == nil && json.Unmarshal(env.Response, &out) == nil && out.AuthToken != ""
	h.mu.Lock()
	defer h.mu.Unlock()
	if ok {
		h.token = out.AuthToken
	} else {
		h.renewAt = time.Time{}
	}
}

// printFleet says how the fleet's requests split, and the server's memory
// when its pid is known.
func printFleet(w io.Writer, f *fleet, pid int) error {
	fmt.Fprintf(w, "fleet: %d hosts, %d logins, %d whoami\n", len(f.hosts), f.logins.Load(), f.whoamis.Load())
	if pid <= 0 {
		return nil
	}
	m, err := readProcMemory(pid)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "server pid %d: resident now (VmRSS) %s, peak (VmHWM) %s\n", pid, fmtKiB(m.currentKiB), fmtKiB(m.peakKiB))
	return nil
}

// seedFleet creates the fleet's hosts in store for -serve. A password
// that qualifies as a machine secret is kept as a digest bound to each
// host, cheap to make, so every host is created through the library; an
// argon2id hash is bound to no host, so it is made once and the other
// hosts share it, and a fleet of a million hosts is made in seconds either
// way.
func seedFleet(ctx context.Context, o *options, auth *nmauth.Authenticator, store nmauth.Store, out io.Writer) error {
	if o.fleetHosts == 0 {
		return nil
	}
	if o.fleetPassword == "" {
		return errors.New("-serve with -fleet-hosts needs -fleet-password or NMAUTH_LOAD_FLEET_PASSWORD")
	}
	first := fleetHostID(o.fleetPrefix, 0)
	if err := auth.Admin().CreateHost(ctx, first, "", o.fleetPassword); err != nil {
		return err
	}
	h, err := store.GetHost(ctx, first)
	if err != nil {
		return err
	}
	shared := strings.HasPrefix(h.PasswordHash, "$argon2id$")
	for i := 1; i < o.fleetHosts; i++ {
		h.ID = fleetHostID(o.fleetPrefix, i)
		if shared {
			err = store.CreateHost(ctx, h)
		} else {
			err = auth.Admin().CreateHost(ctx, h.ID, "", o.fleetPassword)
		}
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "created %d hosts %s…%s\n", o.fleetHosts, first, h.ID)
	return nil
}
