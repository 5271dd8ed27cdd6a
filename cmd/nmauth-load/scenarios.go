package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// scenarioNames are the scenarios the tool knows, in the order of the
// usage text.
var scenarioNames = []string{"healthz", "whoami", "login", "verify-totp"}

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

// runScenarios runs each scenario in turn with the same bounds and
// returns what each measured.
func runScenarios(ctx context.Context, o *options, a *api, log io.Writer) ([]*result, error) {
	var results []*result
	for _, name := range o.scenarios {
		next, finish, err := prepareScenario(ctx, o, a, name, log)
		if err != nil {
			return results, fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(log, "running %s: %d clients, %s\n", name, o.bounds.clients, describeBounds(o.bounds))
		r, err := drive(ctx, a, name, next, o.bounds)
		if err != nil {
			return results, err
		}
		if finish != nil {
			if err := finish(); err != nil {
				return results, fmt.Errorf("%s: %w", name, err)
			}
		}
		results = append(results, r)
	}
	return results, nil
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
			return &requestSpec{req: req}, err
		}, nil, nil
	case "verify-totp":
		return prepareVerify(ctx, o, a, log)
	}
	return nil, nil, fmt.Errorf("unknown scenario")
}

// fixedSource sends the same request again and again.
func fixedSource(a *api, method, path, bearer string, body any) source {
	return func(ctx context.Context) (*requestSpec, error) {
		req, err := a.newRequest(ctx, method, path, bearer, body)
		return &requestSpec{req: req}, err
	}
}
