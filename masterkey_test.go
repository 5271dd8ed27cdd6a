package nmauth

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	strongKey      = "k7Qm2vX9pL4sT8wZ1cR6yB3nF5hJ0dGa" // 32 characters
	otherStrongKey = "Zx81mQpLw0Vb7TrYc2Hn5Ks9Dj4Fg6Ae"
)

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
		wantSrc MasterKeySource
		wantKey string
	}{
		{
			name:    "env wins over file",
			env:     map[string]string{"MASTER_KEY": strongKey},
			files:   map[string]string{"dev": masterKeyYAML(otherStrongKey)},
			wantSrc: MasterKeyFromEnv,
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
			wantSrc: MasterKeyFromDefault,
			wantKey: DefaultMasterKey,
		},
		{
			name:    "only another environment's file",
			env:     map[string]string{"NMAUTH_ENV": "prod"},
			files:   map[string]string{"dev": masterKeyYAML(strongKey)},
			allow:   true,
			wantSrc: MasterKeyFromDefault,
			wantKey: DefaultMasterKey,
		},
		{
			name:    "empty masterkey falls through",
			files:   map[string]string{"dev": masterKeyYAML("")},
			allow:   true,
			wantSrc: MasterKeyFromDefault,
			wantKey: DefaultMasterKey,
		},
		{
			name:    "absent masterkey falls through",
			files:   map[string]string{"dev": "server:\n  port: 8081\ndatabase:\n  host: db\n"},
			allow:   true,
			wantSrc: MasterKeyFromDefault,
			wantKey: DefaultMasterKey,
		},
		{
			name:    "null server falls through",
			files:   map[string]string{"dev": "server:\n"},
			allow:   true,
			wantSrc: MasterKeyFromDefault,
			wantKey: DefaultMasterKey,
		},
		{
			name:    "empty file falls through",
			files:   map[string]string{"dev": ""},
			allow:   true,
			wantSrc: MasterKeyFromDefault,
			wantKey: DefaultMasterKey,
		},
		{
			name:    "comment-only file falls through",
			files:   map[string]string{"dev": "# nothing set here\n"},
			allow:   true,
			wantSrc: MasterKeyFromDefault,
			wantKey: DefaultMasterKey,
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
			mk, src, err := LoadMasterKey(MasterKeyOptions{
				Getenv: fakeEnv(tt.env), Dir: dir, AllowInsecure: tt.allow, Logger: logger,
			})
			if err != nil {
				t.Fatalf("LoadMasterKey: %v", err)
			}
			if src != tt.wantSrc {
				t.Errorf("source = %q, want %q", src, tt.wantSrc)
			}
			if !mk.Check(tt.wantKey) {
				t.Errorf("Check(expected key) = false")
			}
			for _, other := range []string{strongKey, otherStrongKey, DefaultMasterKey} {
				if other != tt.wantKey && mk.Check(other) {
					t.Errorf("Check accepts a key from another source")
				}
			}
		})
	}
}

func TestLoadMasterKeyDefaults(t *testing.T) {
	t.Run("Dir defaults to the working directory", func(t *testing.T) {
		dir := t.TempDir()
		writeEnvFile(t, dir, "dev", masterKeyYAML(strongKey))
		t.Chdir(dir)
		mk, src, err := LoadMasterKey(MasterKeyOptions{Getenv: fakeEnv(nil)})
		if err != nil {
			t.Fatal(err)
		}
		if src != "config/environments/dev.yaml" || !mk.Check(strongKey) {
			t.Errorf("source %q, Check %v; want the dev file's key", src, mk.Check(strongKey))
		}
	})
	t.Run("Getenv defaults to os.Getenv", func(t *testing.T) {
		t.Setenv("MASTER_KEY", otherStrongKey)
		t.Setenv("NMAUTH_ENV", "")
		mk, src, err := LoadMasterKey(MasterKeyOptions{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if src != MasterKeyFromEnv || !mk.Check(otherStrongKey) {
			t.Errorf("source %q, Check %v; want the environment's key", src, mk.Check(otherStrongKey))
		}
	})
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
			mk, _, err := LoadMasterKey(MasterKeyOptions{Getenv: fakeEnv(nil), Dir: dir, AllowInsecure: true})
			if err == nil {
				t.Fatalf("LoadMasterKey succeeded (key %v); want an error", mk)
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
	_, _, err := LoadMasterKey(MasterKeyOptions{Getenv: fakeEnv(nil), Dir: dir, AllowInsecure: true})
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v; want an error naming %s", err, path)
	}
}

func TestLoadMasterKeyOversizedFile(t *testing.T) {
	dir := t.TempDir()
	content := masterKeyYAML(strongKey) + "# " + strings.Repeat("x", maxConfigFileSize) + "\n"
	path := writeEnvFile(t, dir, "dev", content)
	_, _, err := LoadMasterKey(MasterKeyOptions{Getenv: fakeEnv(nil), Dir: dir})
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
			mk, _, err := LoadMasterKey(MasterKeyOptions{
				Getenv: fakeEnv(map[string]string{"NMAUTH_ENV": env}), Dir: base, AllowInsecure: true,
			})
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
		if _, _, err := LoadMasterKey(MasterKeyOptions{
			Getenv: fakeEnv(map[string]string{"NMAUTH_ENV": env, "MASTER_KEY": strongKey}), Dir: base,
		}); err != nil {
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
		wantSrc MasterKeySource
		key     string
	}{
		{"default", map[string]string{"NMAUTH_ENV": "staging"}, "", MasterKeyFromDefault, DefaultMasterKey},
		{"short in env", map[string]string{"MASTER_KEY": short, "NMAUTH_ENV": "staging"}, "", MasterKeyFromEnv, short},
		{"short in file", map[string]string{"NMAUTH_ENV": "staging"}, masterKeyYAML(short), "config/environments/staging.yaml", short},
		{"default in file", map[string]string{"NMAUTH_ENV": "staging"}, masterKeyYAML(DefaultMasterKey), "config/environments/staging.yaml", DefaultMasterKey},
	}
	for _, tt := range tests {
		t.Run(tt.name+" refused", func(t *testing.T) {
			dir := t.TempDir()
			if tt.file != "" {
				writeEnvFile(t, dir, "staging", tt.file)
			}
			logger, logs := captureLogger(t)
			mk, _, err := LoadMasterKey(MasterKeyOptions{Getenv: fakeEnv(tt.env), Dir: dir, Logger: logger})
			if !errors.Is(err, ErrInsecureMasterKey) {
				t.Fatalf("err = %v, key %v; want ErrInsecureMasterKey", err, mk)
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
			mk, src, err := LoadMasterKey(MasterKeyOptions{Getenv: fakeEnv(tt.env), Dir: dir, Logger: logger, AllowInsecure: true})
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

func TestNewMasterKey(t *testing.T) {
	tests := []struct {
		name         string
		key          string
		wantInsecure bool // refused unless allowInsecure
	}{
		{"default", DefaultMasterKey, true},
		{"31 characters", strings.Repeat("q", 31), true},
		{"31 three-byte characters", strings.Repeat("€", 31), true},
		{"32 characters", strings.Repeat("q", 32), false},
		{"32 two-byte characters", strings.Repeat("é", 32), false},
		{"long", strongKey + strongKey + strongKey, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, logs := captureLogger(t)
			mk, err := NewMasterKey(tt.key, false, logger)
			if tt.wantInsecure {
				if !errors.Is(err, ErrInsecureMasterKey) || mk != nil {
					t.Fatalf("NewMasterKey = %v, %v; want ErrInsecureMasterKey", mk, err)
				}
				if strings.Contains(err.Error(), tt.key) {
					t.Errorf("error %q contains the key", err)
				}
			} else if err != nil || !mk.Check(tt.key) {
				t.Fatalf("NewMasterKey: %v", err)
			}
			if logs.Len() != 0 {
				t.Errorf("logged %q without allowInsecure", logs)
			}

			mk, err = NewMasterKey(tt.key, true, logger)
			if err != nil || !mk.Check(tt.key) {
				t.Fatalf("NewMasterKey(allowInsecure): %v", err)
			}
			warned := strings.Contains(logs.String(), "level=WARN")
			if warned != tt.wantInsecure {
				t.Errorf("warning logged = %v, want %v (log %q)", warned, tt.wantInsecure, logs)
			}
			if strings.Contains(logs.String(), tt.key) {
				t.Errorf("log %q contains the key", logs)
			}
		})
	}
}

func TestNewMasterKeyEmpty(t *testing.T) {
	for _, allow := range []bool{false, true} {
		mk, err := NewMasterKey("", allow, nil)
		if err == nil || mk != nil {
			t.Errorf("allowInsecure=%v: NewMasterKey(\"\") = %v, %v; want an error", allow, mk, err)
		}
		if errors.Is(err, ErrInsecureMasterKey) {
			t.Errorf("allowInsecure=%v: empty key error %v wraps ErrInsecureMasterKey, which suggests allowing it", allow, err)
		}
	}
}

func TestNewMasterKeyNilLoggerUsesDefault(t *testing.T) {
	logger, logs := captureLogger(t)
	prev := slog.Default()
	slog.SetDefault(logger)
	t.Cleanup(func() { slog.SetDefault(prev) })

	if _, err := NewMasterKey(DefaultMasterKey, true, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "insecure master key") {
		t.Errorf("default logger got %q; want the warning", logs)
	}
}

func TestMasterKeyCheck(t *testing.T) {
	mk, err := NewMasterKey(strongKey, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		candidate string
		want      bool
	}{
		{"exact", strongKey, true},
		{"empty", "", false},
		{"other key same length", otherStrongKey, false},
		{"prefix", strongKey[:31], false},
		{"one extra byte", strongKey + "x", false},
		{"last byte changed", strongKey[:31] + "b", false},
		{"case changed", strings.ToUpper(strongKey), false},
		{"much longer", strings.Repeat(strongKey, 10), false},
		{"default", DefaultMasterKey, false},
		{"with Bearer word", "Bearer " + strongKey, false},
		{"trailing newline", strongKey + "\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mk.Check(tt.candidate); got != tt.want {
				t.Errorf("Check = %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("nil receiver", func(t *testing.T) {
		var nilKey *MasterKey
		if nilKey.Check("") || nilKey.Check(strongKey) {
			t.Error("nil MasterKey matched")
		}
	})
	t.Run("zero value", func(t *testing.T) {
		var zero MasterKey
		if zero.Check("") || zero.Check(strongKey) {
			t.Error("zero MasterKey matched")
		}
	})
}

func TestMasterKeyCheckLongKey(t *testing.T) {
	// Lengths around the hashing buffer's size, where a chunking mistake
	// would show.
	for _, n := range []int{255, 256, 257, 512, 513, 5000} {
		key := strings.Repeat("k", n-1) + "!"
		mk, err := NewMasterKey(key, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !mk.Check(key) {
			t.Errorf("%d-byte key: Check(key) = false", n)
		}
		if mk.Check(key[:n-1]+"?") || mk.Check(key[:n-1]) || mk.Check(key+"k") || mk.Check("?"+key[1:]) {
			t.Errorf("%d-byte key: Check accepts a near miss", n)
		}
	}
}

func TestMasterKeyCheckDoesNotAllocate(t *testing.T) {
	mk, err := NewMasterKey(strongKey, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, candidate := range []string{"", "short", strongKey, strings.Repeat("z", 4096)} {
		allocs := testing.AllocsPerRun(200, func() { mk.Check(candidate) })
		if allocs != 0 {
			t.Errorf("Check of a %d-byte candidate: %v allocations per run, want 0", len(candidate), allocs)
		}
	}
}

func TestMasterKeyRedacted(t *testing.T) {
	mk, err := NewMasterKey(strongKey, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256([]byte(strongKey))
	forbidden := []string{strongKey, hex.EncodeToString(digest[:]), fmt.Sprint(digest[:]), fmt.Sprintf("%x", digest[:])}

	var jsonLog, textLog bytes.Buffer
	slog.New(slog.NewJSONHandler(&jsonLog, nil)).Info("loaded", "masterkey", mk)
	slog.New(slog.NewTextHandler(&textLog, nil)).Info("loaded", slog.Any("masterkey", mk))

	outputs := map[string]string{
		"%v":        fmt.Sprintf("%v", mk),
		"%+v":       fmt.Sprintf("%+v", mk),
		"%s":        fmt.Sprintf("<%s>", mk),
		"%#v":       fmt.Sprintf("%#v", mk),
		"String":    mk.String(),
		"LogValue":  mk.LogValue().String(),
		"json log":  jsonLog.String(),
		"text log":  textLog.String(),
		"value %v":  fmt.Sprintf("%v", *mk),
		"value %+v": fmt.Sprintf("%+v", *mk),
		"value %#v": fmt.Sprintf("%#v", *mk),
	}
	for name, out := range outputs {
		t.Run(name, func(t *testing.T) {
			for _, f := range forbidden {
				if strings.Contains(out, f) {
					t.Errorf("output %q reveals the key or its digest", out)
				}
			}
		})
	}
	for _, name := range []string{"%v", "%+v", "%s", "%#v", "String", "LogValue", "json log", "text log"} {
		if !strings.Contains(outputs[name], "[REDACTED]") {
			t.Errorf("%s output %q lacks [REDACTED]", name, outputs[name])
		}
	}
}
