package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// groupsOptions shape the groups scenario (issue 38): a flood from many
// client groups, each one address with one request in flight, named in
// X-Forwarded-For, for a server that trusts 127.0.0.1 as its proxy
// (nmauthd serve --trusted-proxy 127.0.0.1, or -serve, which does).
type groupsOptions struct {
	// groups is how many groups flood; ipv6 puts them in IPv6 /56s of
	// one /48 rather than IPv4 /24s.
	groups int
	ipv6   bool
	// flood is what the groups send: made-up names with wrong passwords
	// ("made-up"), right logins of -flood-user, or of the fleet's second
	// host ("account"), or wrong passwords for the account that logs in
	// meanwhile ("own").
	flood string
	// device is where that account logs in from: each time an address it
	// never used ("new"), or the one it logged in from before the flood
	// ("known").
	device string
	// login is the kind of account: "user" (-user, flood account
	// -flood-user) or "host" (the fleet's first host, flood account its
	// second, all with -fleet-password).
	login string
	// every is the time from one of the account's logins to its next.
	every time.Duration

	floodUser, floodPassword string
}

// groupClient is the address of the i-th flooding group: 198.18.i.1 in
// an IPv4 /24 of its own, or 2001:db8:77:ii00::1 in an IPv6 /56 of its
// own inside one /48.
func (g *groupsOptions) groupClient(i int) string {
	if g.ipv6 {
		return fmt.Sprintf("2001:db8:77:%02x00::1", i%256)
	}
	return fmt.Sprintf("198.%d.%d.1", 18+i/256, i%256)
}

// deviceClient is the account's address for its n-th login: always the
// same when it is known, else one it never used.
func (g *groupsOptions) deviceClient(n int) string {
	if g.device == "known" {
		n = 0
	}
	if g.ipv6 {
		return fmt.Sprintf("2001:db8:99:%x::1", n)
	}
	return fmt.Sprintf("203.0.%d.%d", 113+n/250, 1+n%250)
}

// groupsLogin is one login of the scenario: the route, and its body.
func groupsLogin(ctx context.Context, a *api, login, name, password, client string) (answer, error) {
	path, body := "/api/users/adm/authenticate", any(userAuthRequest{Username: name, Password: password})
	if login == "host" {
		path, body = "/api/hosts/adm/authenticate", hostAuthRequest{ID: name, Password: password}
	}
	req, err := a.newRequest(ctx, http.MethodPost, path, "", body)
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("X-Forwarded-For", client)
	return a.do(req)
}

// checkGroups checks the groups scenario's options.
func checkGroups(o *options) error {
	g := &o.groups
	switch {
	case g.groups < 1 || g.groups > 256:
		return errors.New("-groups must be 1 to 256")
	case g.flood != "made-up" && g.flood != "account" && g.flood != "own":
		return errors.New("-groups-flood must be made-up, account or own")
	case g.device != "new" && g.device != "known":
		return errors.New("-groups-device must be new or known")
	case g.login != "user" && g.login != "host":
		return errors.New("-groups-login must be user or host")
	case g.login == "user" && (o.user == "" || o.password == ""):
		return errors.New("needs -user and a password (-password or NMAUTH_LOAD_PASSWORD)")
	case g.login == "user" && g.flood == "account" && (g.floodUser == "" || g.floodPassword == ""):
		return errors.New("-groups-flood account needs -flood-user and -flood-password")
	case g.login == "host" && o.fleetPassword == "":
		return errors.New("needs the fleet's password (-fleet-password or NMAUTH_LOAD_FLEET_PASSWORD) and two fleet hosts")
	case o.bounds.d <= 0:
		return errors.New("needs -d, how long the flood lasts")
	}
	return nil
}

// groupsAccounts are the account that logs in through the flood, and what
// each flooding request sends, by its group and number.
func groupsAccounts(o *options) (name, password string, flood func(i, k int) (string, string)) {
	g := &o.groups
	name, password = o.user, o.password
	other, otherPassword := g.floodUser, g.floodPassword
	if g.login == "host" {
		name, password = fleetHostID(o.fleetPrefix, 0), o.fleetPassword
		other, otherPassword = fleetHostID(o.fleetPrefix, 1), o.fleetPassword
	}
	flood = func(i, k int) (string, string) {
		switch g.flood {
		case "account":
			return other, otherPassword
		case "own":
			return name, fmt.Sprintf("wrong password %d", k)
		}
		return fmt.Sprintf("made-up-%d-%d", i, k), fmt.Sprintf("wrong password %d", k)
	}
	return name, password, flood
}

// groupsFlood runs the groups scenario: -groups groups send what
// -groups-flood says, one request in flight each, for -d; meanwhile the
// account logs in rightly every -groups-every from where -groups-device
// says. The result is the account's logins; a line tells how many answered
// 200 within 5 s, and what the flood got.
func groupsFlood(ctx context.Context, o *options, a *api, log io.Writer) (*result, error) {
	if err := checkGroups(o); err != nil {
		return nil, err
	}
	g := &o.groups
	name, password, flood := groupsAccounts(o)
	if g.device == "known" {
		if ans, err := groupsLogin(ctx, a, g.login, name, password, g.deviceClient(0)); err != nil || ans.status != http.StatusOK {
			return nil, fmt.Errorf("the login before the flood from the known address: %d %v", ans.status, err)
		}
	}
	floodCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	var answers [600]atomic.Int64
	for i := range g.groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; floodCtx.Err() == nil; k++ {
				n, p := flood(i, k)
				ans, err := groupsLogin(floodCtx, a, g.login, n, p, g.groupClient(i))
				if err != nil {
					if floodCtx.Err() == nil {
						answers[0].Add(1)
						time.Sleep(10 * time.Millisecond)
					}
					continue
				}
				answers[ans.status%600].Add(1)
			}
		}()
	}
	// The flood first fills the queue.
	time.Sleep(min(2*time.Second, o.bounds.d/5))
	st := workerStats{statuses: map[int]int{}}
	inTime := 0
	t0 := time.Now()
	for n := 1; time.Since(t0) < o.bounds.d && ctx.Err() == nil; n++ {
		start := time.Now()
		ans, err := groupsLogin(ctx, a, g.login, name, password, g.deviceClient(n))
		took := time.Since(start)
		if err != nil {
			st.transport++
			st.firstErr = cmp(st.firstErr, err)
		} else {
			st.latencies = append(st.latencies, took)
			st.statuses[ans.status]++
			if ans.status == http.StatusOK && took <= rightLoginBound {
				inTime++
			}
		}
		time.Sleep(g.every - took)
	}
	stop()
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := mergeStats("groups", time.Since(t0), []workerStats{st})
	family := "IPv4 /24s"
	if g.ipv6 {
		family = "IPv6 /56s of one /48"
	}
	fmt.Fprintf(log, "groups: %s from %d %s: 200×%d 401×%d 429×%d 503×%d no-answer×%d\n",
		g.flood, g.groups, family, answers[200].Load(), answers[401].Load(), answers[429].Load(), answers[503].Load(), answers[0].Load())
	fmt.Fprintf(log, "groups: %s %s's right logins from a %s address: %d of %d answered 200 within %s; p99 %s\n",
		g.login, name, g.device, inTime, r.answered()+r.transport, rightLoginBound, fmtDuration(r.percentile(0.99)))
	return r, nil
}
