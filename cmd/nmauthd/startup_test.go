package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMasterKeyRefusal: without a usable master key and without --dev,
// serve exits at once, names where to set a key, and touches nothing.
func TestMasterKeyRefusal(t *testing.T) {
	cases := []struct {
		name string
		env  []string
		file string // content of config/environments/<env>.yaml, if any
		want []string
	}{
		{"no key at all", nil, "", []string{"MASTER_KEY", "config/environments/dev.yaml", "--dev"}},
		{"the default key", []string{"MASTER_KEY=secretkey"}, "", []string{"MASTER_KEY", "config/environments/dev.yaml"}},
		{"a short key", []string{"MASTER_KEY=tooshort"}, "", []string{"MASTER_KEY", "config/environments/dev.yaml"}},
		{"a short key in the prod file", []string{"NMAUTH_ENV=prod"}, "server:\n  masterkey: \"tooshort\"\n",
			[]string{"MASTER_KEY", "config/environments/prod.yaml"}},
		{"a malformed file", nil, "server: [\n", []string{"MASTER_KEY", "config/environments/dev.yaml"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.file != "" {
				env := "dev"
				if strings.Contains(strings.Join(tc.env, " "), "NMAUTH_ENV=prod") {
					env = "prod"
				}
				path := filepath.Join(dir, "config", "environments", env+".yaml")
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			r := runNmauthd(t, dir, baseEnv(tc.env...), "", "serve", "--addr", "127.0.0.1:0", "--db", "nmauth.db")
			if r.code == 0 {
				t.Fatal("serve started without a usable master key")
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not name %s: %q", w, r.stderr)
				}
			}
			if strings.Contains(r.stderr, "tooshort") {
				t.Errorf("stderr shows the refused key: %q", r.stderr)
			}
			for _, f := range []string{"nmauth.db", "nmauth.db.secret"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
					t.Errorf("the refused start created %s", f)
				}
			}
		})
	}
}

// TestDevRefusesNonLoopback: --dev allows the public default key, so it
// must not listen where other machines reach it.
func TestDevRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0", "example.com:0"} {
		t.Run(addr, func(t *testing.T) {
			dir := t.TempDir()
			r := runNmauthd(t, dir, baseEnv(), "", "serve", "--dev", "--addr", addr)
			if r.code != exitFail || !strings.Contains(r.stderr, "loopback") {
				t.Errorf("exit %d, stderr %q; want 1 and a word on loopback", r.code, r.stderr)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("the refused start left files: %v", entries)
			}
		})
	}
}

// TestPostgresNeedsSecret: on PostgreSQL there is no file to keep a
// generated secret in, and replicas must share one, so NMAUTH_SECRET is
// required before anything connects.
func TestPostgresNeedsSecret(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"serve", "--db", "postgres://nmauth:pw@127.0.0.1:1/none"},
		{"user", "list", "--db", "postgresql://nmauth:pw@127.0.0.1:1/none"},
	} {
		r := runNmauthd(t, dir, baseEnv("MASTER_KEY="+testMasterKey), "", args...)
		if r.code != exitFail || !strings.Contains(r.stderr, "NMAUTH_SECRET") || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q; want 1 and one line naming NMAUTH_SECRET", args[0], r.code, r.stderr)
		}
	}
}

// TestRootSecretSources covers the secret file and NMAUTH_SECRET.
func TestRootSecretSources(t *testing.T) {
	t.Run("file open to others is refused", func(t *testing.T) {
		dir := t.TempDir()
		db := filepath.Join(dir, "nmauth.db")
		env := baseEnv()
		provideSecretFile(t, env, db)
		mustRun(t, dir, env, "", "user", "list", "--db", db)
		if err := os.Chmod(db+".secret", 0o640); err != nil {
			t.Fatal(err)
		}
		r := runNmauthd(t, dir, env, "", "user", "list", "--db", db)
		if r.code != exitFail || !strings.Contains(r.stderr, "chmod 600") {
			t.Errorf("exit %d, stderr %q; want 1 and advice to chmod 600", r.code, r.stderr)
		}
	})
	t.Run("NMAUTH_SECRET means no file", func(t *testing.T) {
		dir := t.TempDir()
		db := filepath.Join(dir, "nmauth.db")
		secret := "o_P4vQxSmnbc0KcV4dQoLzU2-QfVABwFqb6Q-jR3bIG1GoOZ8Rj8jg==" // from a random source, in URL-safe base64
		mustRun(t, dir, baseEnv("NMAUTH_SECRET="+secret), "", "user", "list", "--db", db)
		if _, err := os.Stat(db + ".secret"); err == nil {
			t.Error("a secret file was made although NMAUTH_SECRET was set")
		}
	})
	t.Run("bad NMAUTH_SECRET is refused without showing it", func(t *testing.T) {
		dir := t.TempDir()
		for _, bad := range []string{"c2hvcnQ=", strings.Repeat("ab", 32) + ",not*base64*at*all*but*long*enough*really"} {
			r := runNmauthd(t, dir, baseEnv("NMAUTH_SECRET="+bad), "", "user", "list", "--db", filepath.Join(dir, "x.db"))
			if r.code != exitFail || !strings.Contains(r.stderr, "NMAUTH_SECRET") || strings.Contains(r.stderr, bad) {
				t.Errorf("exit %d, stderr %q; want 1, naming NMAUTH_SECRET but not its value", r.code, r.stderr)
			}
		}
	})
}

// TestRotateRootSecret rotates NMAUTH_SECRET: with "new,old" tokens of
// the old secret still verify and reseal moves every TOTP secret to the
// new one, after which the old secret can go.
func TestRotateRootSecret(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "nmauth.db")
	oldSecret, newSecret := newRootSecret(t), newRootSecret(t)
	oldEnv := baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SECRET="+oldSecret)
	bothEnv := baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SECRET="+newSecret+","+oldSecret)
	newEnv := baseEnv("MASTER_KEY="+testMasterKey, "NMAUTH_SECRET="+newSecret)
	a := seed(t, dir, oldEnv, db)

	d := startDaemon(t, dir, oldEnv, "--db", db)
	token := d.loginUser(a.user, a.password).AuthToken
	e := d.initTOTP(a.user, token)
	// Turning TOTP on revokes the password-only token; the answer has
	// a fresh one.
	token = d.completeTOTP(a.user, token, e, totpCode(t, e.URL, time.Now())).AuthToken
	d.stop()

	d = startDaemon(t, dir, bothEnv, "--db", db)
	if p := d.whoami(token); p.Name != a.user {
		t.Errorf("with new,old a token of the old secret gave %+v", p)
	}
	d.stop()
	if out := mustRun(t, dir, bothEnv, "", "reseal", "--db", db); !strings.Contains(out, "resealed 1 ") {
		t.Errorf("first reseal printed %q, want 1", out)
	}
	if out := mustRun(t, dir, bothEnv, "", "--db", db, "reseal"); !strings.Contains(out, "resealed 0 ") {
		t.Errorf("second reseal printed %q, want 0", out)
	}

	d = startDaemon(t, dir, newEnv, "--db", db)
	if r := d.call("GET", "/api/whoami", token, nil); r.status != http.StatusUnauthorized {
		t.Errorf("a token of the dropped secret: status %d, want 401", r.status)
	}
	pre := d.loginUser(a.user, a.password)
	if r := d.verifyTOTP(a.user, pre.PreAuthToken, nextCode(t, e.URL)); r.status != http.StatusOK {
		t.Errorf("TOTP after reseal and dropping the old secret: status %d: %s", r.status, r.body)
	}
	d.stop()
}
