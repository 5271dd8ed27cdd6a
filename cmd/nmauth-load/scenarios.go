package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// scenarioNames are the scenarios the tool knows, in the order of the
// usage text.
var scenarioNames = []string{"healthz", "whoami", "login", "verify-totp", "fleet", "flood", "burst", "groups"}

func parseScenarios(list string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		known := false
		for _, k := range scenarioNames {
			known = known || s == k
		}
		if !known {
			return nil, fmt.Errorf("unknown scenario %q (known: %s)", s, strings.Join(scenarioNames, ", "))
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no scenario given")
	}
	return out, nil
}

// runScenarios runs the scenarios in turn with the same bounds, the whole
// list o.rounds times, and returns what each measured over all rounds.
// Taking turns in short rounds spreads any other load on the machine over
// every scenario alike, so their ratios stay fair.
func runScenarios(ctx context.Context, o *options, a *api, log io.Writer) ([]*result, error) {
	results := make([]*result, len(o.scenarios))
	for round := range o.rounds {
		for i, name := range o.scenarios {
			r, err := runScenario(ctx, o, a, name, log)
			if err != nil {
				return results[:i], fmt.Errorf("%s: %w", name, err)
			}
			if round == 0 {
				results[i] = r
			} else {
				results[i].add(r)
			}
		}
	}
	return results, nil
}

func runScenario(ctx context.Context, o *options, a *api, name string, log io.Writer) (*result, error) {
	switch name {
	case "flood":
		return passwordFlood(ctx, o, a, log)
	case "burst":
		return hostBurst(ctx, o, a, log)
	case "groups":
		return groupsFlood(ctx, o, a, log)
	}
	next, finish, err := prepareScenario(ctx, o, a, name, log)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "running %s: %d clients, %s\n", name, o.bounds.clients, describeBounds(o.bounds))
	var before, toolBefore time.Duration
	if o.pid > 0 {
		if before, err = readProcCPU(o.pid); err != nil {
			return nil, err
		}
		if toolBefore, err = readProcCPU(os.Getpid()); err != nil {
			return nil, err
		}
	}
	r, err := drive(ctx, a, name, next, o.bounds)
	if err != nil {
		return nil, err
	}
	if o.pid > 0 {
		after, err := readProcCPU(o.pid)
		if err != nil {
			return nil, err
		}
		toolAfter, err := readProcCPU(os.Getpid())
		if err != nil {
			return nil, err
		}
		r.serverCPU, r.toolCPU = after-before, toolAfter-toolBefore
	}
	if finish != nil {
		if err := finish(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func describeBounds(b bounds) string {
	switch {
	case b.d > 0 && b.n > 0:
		return fmt.Sprintf("for %s or %d requests", b.d, b.n)
	case b.d > 0:
		return fmt.Sprintf("for %s", b.d)
	default:
		return fmt.Sprintf("%d requests", b.n)
	}
}

// prepareScenario does the untimed work a scenario needs (a login for
// whoami, pre-auth tokens for verify-totp) and returns its request source
// and, for verify-totp, what to do once it has run.
func prepareScenario(ctx context.Context, o *options, a *api, name string, log io.Writer) (source, func() error, error) {
	switch name {
	case "healthz":
		return fixedSource(a, http.MethodGet, "/healthz", "", nil), nil, nil
	case "whoami":
		if o.user == "" || o.password == "" {
			return nil, nil, fmt.Errorf("needs -user and a password (-password or NMAUTH_LOAD_PASSWORD)")
		}
		token, err := a.userToken(ctx, o.user, o.password)
		if err != nil {
			return nil, nil, err
		}
		return fixedSource(a, http.MethodGet, "/api/whoami", token, nil), nil, nil
	case "login":
		if o.user == "" || o.password == "" {
			return nil, nil, fmt.Errorf("needs -user and a password (-password or NMAUTH_LOAD_PASSWORD)")
		}
		return func(ctx context.Context) (*requestSpec, error) {
			req, err := a.loginRequest(ctx, o.user, o.password)
			return &requestSpec{req: req, from: -1}, err
		}, nil, nil
	case "verify-totp":
		return prepareVerify(ctx, o, a, log)
	case "fleet":
		f, err := newFleet(a, o)
		if err != nil {
			return nil, nil, err
		}
		return f.source, func() error { return printFleet(log, f, o.pid) }, nil
	}
	return nil, nil, fmt.Errorf("unknown scenario")
}

// fixedSource sends the same request again and again.
func fixedSource(a *api, method, path, bearer string, body any) source {
	return func(ctx context.Context) (*requestSpec, error) {
		req, err := a.newRequest(ctx, method, path, bearer, body)
		return &requestSpec{req: req, from: -1}, err
	}
}
