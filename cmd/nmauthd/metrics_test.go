package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/nmauth/nmauth"
)

var metricsLine = regexp.MustCompile(`msg="metrics listening" addr=(\S+)`)

// TestMetrics runs a login flow against nmauthd serve --metrics-addr and
// reads the counts back from GET /metrics on the metrics listener.
func TestMetrics(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "nmauth.db")
	env := baseEnv("MASTER_KEY=" + testMasterKey)
	a := seed(t, dir, env, db)
	d := startDaemon(t, dir, env, "--db", db, "--metrics-addr", "127.0.0.1:0")
	m := metricsLine.FindStringSubmatch(d.stderr.String())
	if m == nil {
		t.Fatalf("no metrics listening line\n%s", d.stderr.String())
	}
	if status, _ := get(t, d.url+"/metrics"); status != http.StatusNotFound {
		t.Errorf("the API listener answers GET /metrics with %d", status)
	}

	const login = "POST /api/users/adm/authenticate"
	const verify = "POST /api/users/{username}/auth/verify-totp"
	tok := d.loginUser(a.user, a.password).AuthToken
	if r := d.call("POST", "/api/users/adm/authenticate", "", map[string]string{"username": a.user, "password": "not the password"}); r.status != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d", r.status)
	}
	e := d.initTOTP(a.user, tok)
	d.completeTOTP(a.user, tok, e, totpCode(t, e.URL, time.Now()))
	pre := d.loginUser(a.user, a.password).PreAuthToken
	if r := d.verifyTOTP(a.user, pre, wrongCode(t, e.URL)); r.status != http.StatusUnauthorized {
		t.Fatalf("wrong code: %d", r.status)
	}
	if r := d.verifyTOTP(a.user, pre, nextCode(t, e.URL)); r.status != http.StatusOK {
		t.Fatalf("right code: %d %s", r.status, r.body)
	}
	d.loginHost(a.host, a.mac, a.hostPassword)

	status, body := get(t, "http://"+m[1]+"/metrics")
	if status != http.StatusOK {
		t.Fatalf("GET /metrics: %d", status)
	}
	if strings.Contains(body, a.user) || strings.Contains(body, a.host) {
		t.Error("a username or host id is in the metrics")
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		family string
		labels map[string]string
		value  float64
	}{
		{"nmauthd_http_requests_total", map[string]string{"route": login, "status": "200"}, 2},
		{"nmauthd_http_requests_total", map[string]string{"route": login, "status": "401"}, 1},
		{"nmauthd_http_requests_total", map[string]string{"route": verify, "status": "401"}, 1},
		{"nmauthd_http_requests_total", map[string]string{"route": verify, "status": "200"}, 1},
		{"nmauthd_http_requests_total", map[string]string{"route": "POST /api/users/{username}/auth/init-totp", "status": "200"}, 1},
		{"nmauthd_http_request_duration_seconds", map[string]string{"route": login}, 3},
		{"nmauthd_http_request_duration_seconds", map[string]string{"route": verify}, 2},
		{"nmauthd_logins_total", map[string]string{"kind": "user", "result": "success"}, 2},
		{"nmauthd_logins_total", map[string]string{"kind": "user", "result": "wrong"}, 1},
		{"nmauthd_logins_total", map[string]string{"kind": "user", "result": "throttled"}, 0},
		{"nmauthd_logins_total", map[string]string{"kind": "user", "result": "overloaded"}, 0},
		{"nmauthd_logins_total", map[string]string{"kind": "host", "result": "success"}, 1},
		{"nmauthd_totp_checks_total", map[string]string{"result": "success"}, 1},
		{"nmauthd_totp_checks_total", map[string]string{"result": "wrong"}, 1},
		{"nmauthd_totp_checks_total", map[string]string{"result": "throttled"}, 0},
		{"nmauthd_totp_checks_total", map[string]string{"result": "overloaded"}, 0},
		{"nmauthd_client_throttled_total", nil, 0},
		{"nmauthd_audit_events_total", map[string]string{"type": "totp.enabled"}, 1},
		{"nmauthd_store_errors_total", map[string]string{"op": "UpdateUser"}, 0},
		{"nmauthd_store_errors_total", map[string]string{"op": "GetHost"}, 0},
		// Every login has finished: no hash runs or waits.
		{"nmauthd_password_hash_slots_in_use", nil, 0},
		{"nmauthd_password_hash_waiting", nil, 0},
		// The user token was checked twice, at init-totp and at
		// complete-totp: parsed both times, since the cache takes a token
		// on its second check, and cached then. The pre-auth token is
		// checked by verify-totp alone.
		{"nmauthd_bearer_cache_requests_total", map[string]string{"cache": "token", "result": "miss"}, 2},
		{"nmauthd_bearer_cache_requests_total", map[string]string{"cache": "token", "result": "hit"}, 0},
		{"nmauthd_bearer_cache_entries", map[string]string{"cache": "token"}, 1},
		// Every request came straight from the test, without a proxy.
		{"nmauthd_client_forwarded_untrusted_total", nil, 0},
		{"nmauthd_client_one_address_minutes_total", nil, 0},
	}
	for _, w := range want {
		got, ok := sample(fams[w.family], w.labels)
		if !ok {
			t.Errorf("%s%v: no such series", w.family, w.labels)
		} else if got != w.value {
			t.Errorf("%s%v = %v, want %v", w.family, w.labels, got, w.value)
		}
	}
	// The two checks of the user token asked for the user's standing: the
	// first read the Store; the second found it cached unless the entry,
	// which lives one to two seconds, had expired in between.
	statusMiss, okMiss := sample(fams["nmauthd_bearer_cache_requests_total"], map[string]string{"cache": "status", "result": "miss"})
	statusHit, okHit := sample(fams["nmauthd_bearer_cache_requests_total"], map[string]string{"cache": "status", "result": "hit"})
	if !okMiss || !okHit || statusMiss < 1 || statusMiss+statusHit != 2 {
		t.Errorf("status cache: %v misses, %v hits; want 2 lookups, the first a miss", statusMiss, statusHit)
	}
	// Each login, code check and enrollment reads or updates the store.
	for _, op := range []string{"UpdateUser", "UpdateHost"} {
		if n, _ := sample(fams["nmauthd_store_call_duration_seconds"], map[string]string{"op": op}); n == 0 {
			t.Errorf("no %s store call was timed", op)
		}
	}
}

// sample returns the value of the series of f with exactly these labels:
// a counter's or gauge's value, or a histogram's count of observations.
func sample(f *dto.MetricFamily, labels map[string]string) (float64, bool) {
	if f == nil {
		return 0, false
	}
	for _, m := range f.Metric {
		if len(m.Label) != len(labels) {
			continue
		}
		match := true
		for _, l := range m.Label {
			if labels[l.GetName()] != l.GetValue() {
				match = false
			}
		}
		if !match {
			continue
		}
		if h := m.GetHistogram(); h != nil {
			return float64(h.GetSampleCount()), true
		}
		if g := m.GetGauge(); g != nil {
			return g.GetValue(), true
		}
		return m.GetCounter().GetValue(), true
	}
	return 0, false
}

// get fetches a URL outside the OpenAPI document: the metrics listener, or
// a path of the API listener that no route serves.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := httpClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestRouteLabels checks that each profile's node login routes get labels
// of their own, taken from that profile's document, and that a 503 there
// counts as an overloaded node login.
func TestRouteLabels(t *testing.T) {
	const node, nodeAdm = "POST /api/nodes/{network}/authenticate", "POST /api/nodes/adm/{network}/authenticate"
	for _, wire := range []nmauth.WireProfile{nmauth.WireSpec, nmauth.WireNetmaker} {
		t.Run(wire.String(), func(t *testing.T) {
			m, err := newMetrics(wire)
			if err != nil {
				t.Fatal(err)
			}
			admLabel := "other"
			if wire == nmauth.WireNetmaker {
				admLabel = nodeAdm
			}
			busy := m.handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusServiceUnavailable)
			}))
			for _, tc := range []struct{ method, path, label string }{
				{"POST", "/api/nodes/net-1/authenticate", node},
				{"POST", "/api/nodes/adm/net-1/authenticate", admLabel},
				{"POST", "/api/nodes/adm/authenticate", node},
				{"GET", "/api/nodes/net-1/authenticate", "other"},
				{"POST", "/api/hosts/adm/authenticate", "POST /api/hosts/adm/authenticate"},
			} {
				req := httptest.NewRequest(tc.method, tc.path, nil)
				if got := m.routes.label(req); got != tc.label {
					t.Errorf("%s %s: label %q, want %q", tc.method, tc.path, got, tc.label)
				}
				busy.ServeHTTP(httptest.NewRecorder(), req)
			}
			overloaded := 2.0
			if wire == nmauth.WireNetmaker {
				overloaded = 3
			}
			gathered, err := m.registry.Gather()
			if err != nil {
				t.Fatal(err)
			}
			fams := map[string]*dto.MetricFamily{}
			for _, f := range gathered {
				fams[f.GetName()] = f
			}
			want := []struct {
				family string
				labels map[string]string
				value  float64
			}{
				{"nmauthd_logins_total", map[string]string{"kind": "node", "result": resultOverloaded}, overloaded},
				{"nmauthd_logins_total", map[string]string{"kind": "host", "result": resultOverloaded}, 1},
				{"nmauthd_http_requests_total", map[string]string{"route": node, "status": "503"}, 2},
				{"nmauthd_http_requests_total", map[string]string{"route": "other", "status": "503"}, 4 - overloaded},
			}
			for _, w := range want {
				if got, _ := sample(fams[w.family], w.labels); got != w.value {
					t.Errorf("%s%v = %v, want %v", w.family, w.labels, got, w.value)
				}
			}
		})
	}
}
