package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nmauth/nmauth"
)

// The tests of nmauthd's master-key lookup, which reads Netmaker's
// config/environments/<env>.yaml; the library's own lookup (MASTER_KEY,
// then the default) and the key's checks are tested in the library.

const (
	strongKey      = "k7Qm2vX9pL4sT8wZ1cR6yB3nF5hJ0dGa" // 32 characters
	otherStrongKey = "Zx81mQpLw0Vb7TrYc2Hn5Ks9Dj4Fg6Ae"
)

var discardLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// fakeEnv returns a Getenv that reads only vars.
func fakeEnv(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

// writeEnvFile writes content to <dir>/config/environments/<env>.yaml.
func writeEnvFile(t *testing.T, dir, env, content string) string {
	t.Helper()
	path := filepath.Join(dir, "config", "environments", env+".yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// captureLogger returns a logger writing text records to the returned
// buffer.
func captureLogger(t *testing.T) (*slog.Logger, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, nil)), &buf
}

func masterKeyYAML(key string) string {
	return fmt.Sprintf("server:\n  port: 8081\n  masterkey: %q\n", key)
}

func TestLoadMasterKeyOrder(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		files   map[string]string // env name -> file content
		allow   bool
		wantSrc masterKeySource
		wantKey string
	}{
		{
			name:    "env wins over file",
			env:     map[string]string{"MASTER_KEY": strongKey},
			files:   map[string]string{"dev": masterKeyYAML(otherStrongKey)},
			wantSrc: masterKeyFromEnv,
			wantKey: strongKey,
		},
		{
			name:    "dev file when env empty",
			env:     map[string]string{"MASTER_KEY": ""},
			files:   map[string]string{"dev": masterKeyYAML(strongKey)},
			wantSrc: "config/environments/dev.yaml",
			wantKey: strongKey,
		},
		{
			name:    "NMAUTH_ENV picks the file",
			env:     map[string]string{"NMAUTH_ENV": "prod-eu_1"},
			files:   map[string]string{"dev": masterKeyYAML(otherStrongKey), "prod-eu_1": masterKeyYAML(strongKey)},
			wantSrc: "config/environments/prod-eu_1.yaml",
			wantKey: strongKey,
		},
		{
			name:    "missing file falls to default",
			allow:   true,
			wantSrc: masterKeyFromDefault,
			wantKey: defaultMasterKey,
		},
		{
			name:    "only another environment's file",
			env:     map[string]string{"NMAUTH_ENV": "prod"},
			files:   map[string]string{"dev": masterKeyYAML(strongKey)},
			allow:   true,
			wantSrc: masterKeyFromDefault,
			wantKey: defaultMasterKey,
		},
		{
			name:    "empty masterkey falls through",
			files:   map[string]string{"dev": masterKeyYAML("")},
			allow:   true,
			wantSrc: masterKeyFromDefault,
			wantKey: defaultMasterKey,
		},
		{
			name:    "absent masterkey falls through",
			files:   map[string]string{"dev": "server:\n  port: 8081\ndatabase:\n  host: db\n"},
			allow:   true,
			wantSrc: masterKeyFromDefault,
			wantKey: defaultMasterKey,
		},
		{
			name:    "null server falls through",
			files:   map[string]string{"dev": "server:\n"},
			allow:   true,
			wantSrc: masterKeyFromDefault,
			wantKey: defaultMasterKey,
		},
		{
			name:    "empty file falls through",
			files:   map[string]string{"dev": ""},
			allow:   true,
			wantSrc: masterKeyFromDefault,
			wantKey: defaultMasterKey,
		},
		{
			name:    "comment-only file falls through",
			files:   map[string]string{"dev": "# nothing set here\n"},
			allow:   true,
			wantSrc: masterKeyFromDefault,
			wantKey: defaultMasterKey,
		},
		{
			name:    "alias to a string",
			files:   map[string]string{"dev": "keys:\n  main: &k \"" + strongKey + "\"\nserver:\n  masterkey: *k\n"},
			wantSrc: "config/environments/dev.yaml",
			wantKey: strongKey,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for env, content := range tt.files {
				writeEnvFile(t, dir, env, content)
			}
			logger, _ := captureLogger(t)
			mk, src, err := loadMasterKey(fakeEnv(tt.env), dir, tt.allow, false, logger)
			if err != nil {
				t.Fatalf("loadMasterKey: %v", err)
			}
			if src != tt.wantSrc {
				t.Errorf("source = %q, want %q", src, tt.wantSrc)
			}
			if !mk.Check(tt.wantKey) {
				t.Errorf("Check(expected key) = false")
			}
			for _, other := range []string{strongKey, otherStrongKey, defaultMasterKey} {
				if other != tt.wantKey && mk.Check(other) {
					t.Errorf("Check accepts a key from another source")
				}
			}
		})
	}
}

// TestLoadMasterKeyWorkingDirectory checks that "." is the directory the
// server runs in, as serve passes it.
func TestLoadMasterKeyWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	writeEnvFile(t, dir, "dev", masterKeyYAML(strongKey))
	t.Chdir(dir)
	logger, _ := captureLogger(t)
	mk, src, err := loadMasterKey(fakeEnv(nil), ".", false, false, logger)
	if err != nil {
		t.Fatal(err)
	}
	if src != "config/environments/dev.yaml" || !mk.Check(strongKey) {
		t.Errorf("source %q, Check %v; want the dev file's key", src, mk.Check(strongKey))
	}
}

func TestLoadMasterKeyBadFile(t *testing.T) {
	const secretish = "s3cr3tvalue-should-not-leak"
	tests := []struct {
		name    string
		content string
	}{
		{"malformed YAML", "server:\n  masterkey: \"unterminated\n"},
		{"bad indentation", "server:\n  masterkey: a\n bad: b\n"},
		{"tab indentation", "server:\n\tmasterkey: x\n"},
		{"masterkey is a mapping", "server:\n  masterkey:\n    value: " + secretish + "\n"},
		{"masterkey is a list", "server:\n  masterkey: [" + secretish + "]\n"},
		{"masterkey is a number", "server:\n  masterkey: 12345678901234567890123456789012345\n"},
		{"masterkey is a bool", "server:\n  masterkey: true\n"},
		{"server is a string", "server: " + secretish + "\n"},
		{"server is a list", "server:\n  - masterkey: x\n"},
		{"document is a list", "- server\n"},
		{"document is a string", secretish + "\n"},
		{"duplicate masterkey", "server:\n  masterkey: \"" + strongKey + "\"\n  masterkey: \"" + otherStrongKey + "\"\n"},
		{"duplicate server", "server:\n  masterkey: \"" + strongKey + "\"\nserver:\n  port: 1\n"},
		{"merge key", "base: &b\n  masterkey: \"" + strongKey + "\"\nserver:\n  <<: *b\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeEnvFile(t, dir, "dev", tt.content)
			mk, _, err := loadMasterKey(fakeEnv(nil), dir, true, false, discardLogger)
			if err == nil {
				t.Fatalf("loadMasterKey succeeded (key %v); want an error", mk)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
			for _, s := range []string{secretish, strongKey, otherStrongKey} {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q contains a value from the file", err)
				}
			}
		})
	}
}

func TestLoadMasterKeyUnreadableFile(t *testing.T) {
	dir := t.TempDir()
	// A directory in place of the file cannot be read, whatever the user
	// running the test may do.
	path := filepath.Join(dir, "config", "environments", "dev.yaml")
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
	_, _, err := loadMasterKey(fakeEnv(nil), dir, true, false, discardLogger)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v; want an error naming %s", err, path)
	}
}

func TestLoadMasterKeyOversizedFile(t *testing.T) {
	dir := t.TempDir()
	content := masterKeyYAML(strongKey) + "# " + strings.Repeat("x", maxConfigFileSize) + "\n"
	path := writeEnvFile(t, dir, "dev", content)
	_, _, err := loadMasterKey(fakeEnv(nil), dir, false, false, discardLogger)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v; want an error naming %s", err, path)
	}
}

func TestLoadMasterKeyEnvNameEscape(t *testing.T) {
	dir := t.TempDir()
	// A readable key outside config/environments/ that an escaping name
	// would reach.
	base := filepath.Join(dir, "base")
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "outside.yaml"), []byte(masterKeyYAML(strongKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{
		"../../../outside", "..", ".", "a/b", `a\b`, "/etc/passwd", "dev.yaml", "dev ", "dév", "dev\x00", strings.Repeat("a", 65),
	} {
		t.Run(fmt.Sprintf("%q", env), func(t *testing.T) {
			mk, _, err := loadMasterKey(fakeEnv(map[string]string{"NMAUTH_ENV": env}), base, true, false, discardLogger)
			if err == nil {
				t.Fatalf("NMAUTH_ENV %q accepted (key matches outside file: %v)", env, mk.Check(strongKey))
			}
			if !strings.Contains(err.Error(), "NMAUTH_ENV") {
				t.Errorf("error %q does not name NMAUTH_ENV", err)
			}
		})
	}
	t.Run("longest allowed name", func(t *testing.T) {
		env := strings.Repeat("a", 64)
		if _, _, err := loadMasterKey(fakeEnv(map[string]string{"NMAUTH_ENV": env, "MASTER_KEY": strongKey}), base, false, false, discardLogger); err != nil {
			t.Fatalf("64-character name refused: %v", err)
		}
	})
}

func TestLoadMasterKeyInsecure(t *testing.T) {
	const short = "0123456789abcdefghijklmnopqrstu" // 31 characters
	tests := []struct {
		name    string
		env     map[string]string
		file    string
		wantSrc masterKeySource
		key     string
	}{
		{"default", map[string]string{"NMAUTH_ENV": "staging"}, "", masterKeyFromDefault, defaultMasterKey},
		{"short in env", map[string]string{"MASTER_KEY": short, "NMAUTH_ENV": "staging"}, "", masterKeyFromEnv, short},
		{"short in file", map[string]string{"NMAUTH_ENV": "staging"}, masterKeyYAML(short), "config/environments/staging.yaml", short},
		{"default in file", map[string]string{"NMAUTH_ENV": "staging"}, masterKeyYAML(defaultMasterKey), "config/environments/staging.yaml", defaultMasterKey},
	}
	for _, tt := range tests {
		t.Run(tt.name+" refused", func(t *testing.T) {
			dir := t.TempDir()
			if tt.file != "" {
				writeEnvFile(t, dir, "staging", tt.file)
			}
			logger, logs := captureLogger(t)
			mk, _, err := loadMasterKey(fakeEnv(tt.env), dir, false, false, logger)
			if !errors.Is(err, nmauth.ErrInsecureMasterKey) {
				t.Fatalf("err = %v, key %v; want nmauth.ErrInsecureMasterKey", err, mk)
			}
			msg := err.Error()
			for _, want := range []string{"MASTER_KEY", "config/environments/staging.yaml"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not name %s", msg, want)
				}
			}
			if strings.Contains(msg, tt.key) {
				t.Errorf("error %q contains the key", msg)
			}
			if logs.Len() != 0 {
				t.Errorf("refusal logged %q; want nothing", logs)
			}
		})
		t.Run(tt.name+" allowed", func(t *testing.T) {
			dir := t.TempDir()
			if tt.file != "" {
				writeEnvFile(t, dir, "staging", tt.file)
			}
			logger, logs := captureLogger(t)
			mk, src, err := loadMasterKey(fakeEnv(tt.env), dir, true, false, logger)
			if err != nil {
				t.Fatal(err)
			}
			if src != tt.wantSrc || !mk.Check(tt.key) {
				t.Errorf("source %q, Check %v; want %q, true", src, mk.Check(tt.key), tt.wantSrc)
			}
			out := logs.String()
			if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "insecure master key") {
				t.Errorf("log %q lacks the insecure-key warning", out)
			}
			if !strings.Contains(out, string(tt.wantSrc)) {
				t.Errorf("log %q does not name the source %q", out, tt.wantSrc)
			}
			if strings.Contains(out, tt.key) {
				t.Errorf("log %q contains the key", out)
			}
		})
	}
}

// TestLoadMasterKeyWeak: a key of 32 characters or more that does not read
// as random (issue 38: 32 times "a" started without a word) is refused,
// from the environment or the file, with an error that names
// --allow-weak-master-key and not the key; with that flag, or --dev, it is
// accepted with a warning. The default and short keys stay refused under
// the flag: it accepts a weak key, not a public or short one.
func TestLoadMasterKeyWeak(t *testing.T) {
	weak := strings.Repeat("a", 32)
	tests := []struct {
		name    string
		env     map[string]string
		file    string
		wantSrc masterKeySource
	}{
		{"in env", map[string]string{"MASTER_KEY": weak}, "", masterKeyFromEnv},
		{"in file", nil, masterKeyYAML(weak), "config/environments/dev.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.file != "" {
				writeEnvFile(t, dir, "dev", tt.file)
			}
			logger, logs := captureLogger(t)
			mk, _, err := loadMasterKey(fakeEnv(tt.env), dir, false, false, logger)
			if !errors.Is(err, nmauth.ErrWeakMasterKey) || mk != nil {
				t.Fatalf("err = %v, key %v; want nmauth.ErrWeakMasterKey", err, mk)
			}
			if msg := err.Error(); !strings.Contains(msg, "--allow-weak-master-key") || strings.Contains(msg, weak) ||
				!strings.Contains(msg, "does not read as random") {
				t.Errorf("error %q: want it to say the key is not random and name --allow-weak-master-key, without the key", msg)
			}
			if logs.Len() != 0 {
				t.Errorf("refusal logged %q; want nothing", logs)
			}
			for _, allow := range []struct{ dev, weakOK bool }{{false, true}, {true, false}} {
				logger, logs := captureLogger(t)
				mk, src, err := loadMasterKey(fakeEnv(tt.env), dir, allow.dev, allow.weakOK, logger)
				if err != nil || src != tt.wantSrc || !mk.Check(weak) {
					t.Fatalf("dev %v, weakOK %v: source %q, %v; want the key from %q", allow.dev, allow.weakOK, src, err, tt.wantSrc)
				}
				if out := logs.String(); !strings.Contains(out, "level=WARN") || strings.Contains(out, weak) {
					t.Errorf("dev %v, weakOK %v: log %q; want a warning without the key", allow.dev, allow.weakOK, out)
				}
			}
		})
	}
	for _, key := range []string{defaultMasterKey, "0123456789abcdefghijklmnopqrstu"} {
		_, _, err := loadMasterKey(fakeEnv(map[string]string{"MASTER_KEY": key}), t.TempDir(), false, true, discardLogger)
		if !errors.Is(err, nmauth.ErrInsecureMasterKey) || errors.Is(err, nmauth.ErrWeakMasterKey) {
			t.Errorf("--allow-weak-master-key with a %d-character key: %v; want it refused as insecure", len(key), err)
		}
	}
}

// TestServeRefusesWeakMasterKey: nmauthd serve with MASTER_KEY of 32
// times "a" exits with one line that names --allow-weak-master-key,
// and starts with that flag.
func TestServeRefusesWeakMasterKey(t *testing.T) {
	dir := t.TempDir()
	env := baseEnv("MASTER_KEY=" + strings.Repeat("a", 32))
	r := runNmauthd(t, dir, env, "", "serve", "--addr", "127.0.0.1:0", "--db", "nmauth.db")
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if r.code == 0 || len(lines) != 1 || !strings.Contains(lines[0], "--allow-weak-master-key") {
		t.Fatalf("exit %d, stderr %q; want a refusal in one line naming --allow-weak-master-key", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, strings.Repeat("a", 32)) {
		t.Errorf("stderr shows the key: %q", r.stderr)
	}
	d := startDaemon(t, dir, env, "--db", "nmauth.db", "--allow-weak-master-key")
	if p := d.whoami(strings.Repeat("a", 32)); p.Kind != "master" {
		t.Errorf("whoami with the accepted key: %+v", p)
	}
	if !strings.Contains(d.stderr.String(), "insecure master key allowed") {
		t.Errorf("no warning logged:\n%s", d.stderr.String())
	}
}
