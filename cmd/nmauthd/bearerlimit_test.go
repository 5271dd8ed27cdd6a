package main

import (
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
)

// TestWrongMasterKeysThrottled: through nmauthd, wrong master keys from
// one address get 401 for the default burst of 20 and then 429 with
// Retry-After (issue 38: 3,000 wrong master keys got 3,000 × 401), and the
// right master key from that address gets 429 too until the limit lets it
// try again.
func TestWrongMasterKeysThrottled(t *testing.T) {
	dir := t.TempDir()
	env := baseEnv("MASTER_KEY=" + testMasterKey)
	d := startDaemon(t, dir, env, "--db", filepath.Join(dir, "nmauth.db"))
	statuses := map[int]int{}
	for i := range 100 {
		r := d.call("GET", "/api/whoami", "wrong-master-key-"+strconv.Itoa(i), nil)
		statuses[r.status]++
		if r.status == http.StatusTooManyRequests && r.header.Get("Retry-After") == "" {
			t.Fatalf("429 without Retry-After: %v", r.header)
		}
	}
	if statuses[http.StatusUnauthorized] > 25 || statuses[http.StatusTooManyRequests] < 75 {
		t.Fatalf("100 wrong master keys: %v; want about 20 × 401, then 429", statuses)
	}
	if r := d.call("GET", "/api/whoami", testMasterKey, nil); r.status != http.StatusTooManyRequests {
		t.Fatalf("the right master key from the throttled address: %d, want 429", r.status)
	}
}
