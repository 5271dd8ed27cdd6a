package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestChaos runs the harness, each kind of fault once with seed 1, when
// NMAUTH_CHAOS is set (CI sets it, after making the private cluster it
// restarts and pauses):
//
//	dsn=$(NMAUTH_PG_CLUSTER=nmauthchaos NMAUTH_PG_PORT=5441 bash .ci/postgres)
//	NMAUTH_CHAOS=1 NMAUTH_TEST_PG_CHAOS_DSN=$dsn go test -run TestChaos -v ./cmd/nmauth-chaos
//
// It is opt-in because it stops and pauses a PostgreSQL cluster, which
// needs root and a cluster of its own. Any invariant broken fails it.
func TestChaos(t *testing.T) {
	if os.Getenv("NMAUTH_CHAOS") == "" {
		t.Skip("set NMAUTH_CHAOS=1 and NMAUTH_TEST_PG_CHAOS_DSN to run the replicas under faults")
	}
	dsn := os.Getenv("NMAUTH_TEST_PG_CHAOS_DSN")
	if dsn == "" {
		t.Fatal("NMAUTH_CHAOS is set without NMAUTH_TEST_PG_CHAOS_DSN")
	}
	cluster := os.Getenv("NMAUTH_TEST_PG_CHAOS_CLUSTER")
	if cluster == "" {
		cluster = "15/nmauthchaos"
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "nmauthd")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/nmauth/nmauth/cmd/nmauthd").CombinedOutput(); err != nil {
		t.Fatalf("building nmauthd: %v\n%s", err, out)
	}
	start := time.Now()
	rep, err := run(&config{DSN: dsn, Cluster: cluster, Seed: 1, Nmauthd: bin, Dir: dir, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("run of %s:\n%s", time.Since(start).Round(time.Second), rep.text())
	if len(rep.Faults) != len(faultKinds) {
		t.Errorf("%d faults injected, want one of each of the %d kinds", len(rep.Faults), len(faultKinds))
	}
	for _, v := range rep.Violations {
		t.Error(v)
	}
}
