package main

import (
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// quickstartCommand is how docs/nmauthd.md runs the quickstart, from the
// root of a clone, after pasting the lines serve --dev printed.
const quickstartCommand = "bash cmd/nmauthd/testdata/quickstart.sh"

// quickstartServe reads the command that the quickstart's header says
// starts the server, and returns its arguments after nmauthd's name.
func quickstartServe(t *testing.T) []string {
	t.Helper()
	script, err := os.ReadFile("testdata/quickstart.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(script), "\n") {
		if _, args, ok := strings.Cut(line, "#   go run ./cmd/nmauthd "); ok {
			return strings.Fields(args)
		}
	}
	t.Fatal("testdata/quickstart.sh names no go run ./cmd/nmauthd command")
	return nil
}

// TestQuickstart runs the quickstart of docs/nmauthd.md as a newcomer
// does: it starts the server as the script's header says, pastes the
// lines it printed into bash, and runs quickstartCommand. Then it does it
// again after a restart, which prints no password but says how to get
// back in, with the variables of the first start: the script must
// succeed again although the first run left TOTP on.
func TestQuickstart(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq", "oathtool"} {
		if _, err := exec.LookPath(tool); err != nil {
			requireCI(t, "the quickstart test needs "+tool+" (Debian: apt-get install "+tool+")")
		}
	}
	args := quickstartServe(t)
	if len(args) == 0 || args[0] != "serve" {
		t.Fatalf("the quickstart's server command is nmauthd %v, want nmauthd serve ...", args)
	}
	dir := t.TempDir()
	env := baseEnv()
	d := startDaemon(t, dir, env, args[1:]...)
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
	checkPageAddress(t, d, printed)

	out := runQuickstart(t, env, printed)
	for _, want := range []string{
		`{"kind":"host","name":"demo-host"`,
		`{"kind":"user","name":"demo","issuedAt"`,
		`{"kind":"user","name":"demo","totp":true`,
		`{"kind":"master"}`,
		"otpauth://totp/",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("quickstart output lacks %s:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "recovery code: "); n != 10 {
		t.Errorf("quickstart printed %d recovery codes, want 10", n)
	}
	d.stop()

	// The credentials are shown once: a restart on the same database
	// prints no password, and says how to get back in.
	d = startDaemon(t, dir, env, args[1:]...)
	again := d.waitStdout("DEMO_MASTER_KEY=")
	if strings.Contains(again, "PASSWORD") {
		t.Errorf("a second start printed credentials again:\n%s", again)
	}
	for _, want := range []string{"nmauthd user passwd demo", "delete the database", "export NMAUTH_URL=", "export DEMO_USER=demo"} {
		if !strings.Contains(again, want) {
			t.Errorf("a second start does not say %q:\n%s", want, again)
		}
	}
	checkPageAddress(t, d, again)
	// The shell keeps the passwords of the first start; the new lines
	// give the new address.
	out = runQuickstart(t, env, printed+again)
	if !strings.Contains(out, `{"kind":"user","name":"demo","totp":true`) || strings.Count(out, "recovery code: ") != 10 {
		t.Errorf("the quickstart run again did not turn TOTP on again:\n%s", out)
	}
	d.stop()
}

// runQuickstart pastes the lines serve --dev printed into bash, then runs
// quickstartCommand from the root of the clone, and returns its output.
func runQuickstart(t *testing.T, env []string, printed string) string {
	t.Helper()
	var paste strings.Builder
	for _, line := range strings.Split(printed, "\n") {
		if !strings.HasPrefix(line, "#") {
			paste.WriteString(line + "\n")
		}
	}
	paste.WriteString(quickstartCommand + "\n")
	cmd := exec.Command("bash", "-e", "-s")
	cmd.Dir, cmd.Env = "../..", env
	cmd.Stdin = strings.NewReader(paste.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("quickstart failed: %v\n%s", err, out)
	}
	return string(out)
}

// checkPageAddress checks that the server printed the demo page's
// address, on localhost, and that the page is there.
func checkPageAddress(t *testing.T, d *daemon, printed string) {
	t.Helper()
	m := regexp.MustCompile(`open the demo page at (http://localhost:[0-9]+/)`).FindStringSubmatch(printed)
	if m == nil || !strings.HasSuffix(m[1], ":"+strings.Split(d.url, ":")[2]+"/") {
		t.Fatalf("serve --dev printed no demo page address on its port (%s):\n%s", d.url, printed)
	}
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("GET %s: %d %s, want the page", m[1], resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

var shellAssignment = regexp.MustCompile(`^(?:export )?([A-Z_]+)=(\S+)$`)

// devVariables reads the export NAME=value lines of serve --dev.
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

// TestDemoPageAddressLogged checks that serve --demo-page, without --dev,
// says at start where the page is, and that the page is there.
func TestDemoPageAddressLogged(t *testing.T) {
	dir := t.TempDir()
	d := startDaemon(t, dir, baseEnv("MASTER_KEY="+testMasterKey), "--demo-page")
	d.waitHealthy()
	m := regexp.MustCompile(`demo page.*url=(http://127\.0\.0\.1:[0-9]+/)`).FindStringSubmatch(d.stderr.String())
	if m == nil || m[1] != d.url+"/" {
		t.Fatalf("serve --demo-page logged no demo page address at %s/:\n%s", d.url, d.stderr.String())
	}
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %d, want the page", m[1], resp.StatusCode)
	}
	d.stop()
}
