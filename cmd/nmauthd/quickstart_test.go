package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestQuickstart runs testdata/quickstart.sh, the README's walk through
// every route with curl, jq and oathtool, against nmauthd serve --dev fed
// the variables that the server printed.
func TestQuickstart(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq", "oathtool"} {
		if _, err := exec.LookPath(tool); err != nil {
			requireCI(t, "the quickstart test needs "+tool+" (Debian: apt-get install "+tool+")")
		}
	}
	dir := t.TempDir()
	env := baseEnv()
	d := startDaemon(t, dir, env, "--dev")
	printed := d.waitStdout("DEMO_MASTER_KEY=")
	vars := devVariables(t, printed)
	for _, name := range []string{"NMAUTH_URL", "DEMO_USER", "DEMO_PASSWORD", "DEMO_HOST", "DEMO_HOST_PASSWORD"} {
		if vars[name] == "" {
			t.Fatalf("serve --dev printed no %s:\n%s", name, printed)
		}
	}
	if vars["DEMO_MASTER_KEY"] != "secretkey" {
		t.Errorf("serve --dev with the default master key printed DEMO_MASTER_KEY=%q", vars["DEMO_MASTER_KEY"])
	}

	script, err := os.ReadFile("testdata/quickstart.sh")
	if err != nil {
		t.Fatal(err)
	}
	// Run as a newcomer pastes it: the variable lines, then the script.
	var paste strings.Builder
	for _, line := range strings.Split(printed, "\n") {
		if !strings.HasPrefix(line, "#") {
			paste.WriteString(line + "\n")
		}
	}
	paste.Write(script)
	cmd := exec.Command("bash", "-euo", "pipefail", "-s")
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin = strings.NewReader(paste.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("quickstart failed: %v\n%s\nserver log:\n%s", err, out, d.stderr.String())
	}
	for _, want := range []string{
		`{"kind":"host","name":"demo-host"`,
		`{"kind":"user","name":"demo","issuedAt"`,
		`{"kind":"user","name":"demo","totp":true`,
		`{"kind":"master"}`,
		"otpauth://totp/",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("quickstart output lacks %s:\n%s", want, out)
		}
	}
	if n := strings.Count(string(out), "recovery code: "); n != 10 {
		t.Errorf("quickstart printed %d recovery codes, want 10", n)
	}
	d.stop()

	// The credentials are shown once: a restart on the same database
	// prints no password.
	d = startDaemon(t, dir, env, "--dev")
	if printed := d.waitStdout("DEMO_MASTER_KEY="); strings.Contains(printed, "PASSWORD") {
		t.Errorf("a second start printed credentials again:\n%s", printed)
	}
	d.stop()
}

var shellAssignment = regexp.MustCompile(`^([A-Z_]+)=(\S+)$`)

// devVariables reads the NAME=value lines of serve --dev.
func devVariables(t *testing.T, stdout string) map[string]string {
	t.Helper()
	vars := map[string]string{}
	for _, line := range strings.Split(stdout, "\n") {
		if m := shellAssignment.FindStringSubmatch(line); m != nil {
			vars[m[1]] = m[2]
		}
	}
	return vars
}
