package nmauth

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

const (
	strongKey      = "k7Qm2vX9pL4sT8wZ1cR6yB3nF5hJ0dGa" // 32 characters
	otherStrongKey = "Zx81mQpLw0Vb7TrYc2Hn5Ks9Dj4Fg6Ae"
)

// captureLogger returns a logger writing text records to the returned
// buffer.
func captureLogger(t *testing.T) (*slog.Logger, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, nil)), &buf
}

// TestNewMasterKey: the default and short keys are insecure, and a long
// key that does not read as random is weak (issue 38: 32 times "a" was
// accepted); either is refused unless allowInsecure, then accepted with a
// warning; neither the error nor the warning shows the key.
func TestNewMasterKey(t *testing.T) {
	tests := []struct {
		name         string
		key          string
		wantInsecure bool // refused unless allowInsecure
		wantWeak     bool // and refused as weak
	}{
		{"default", wellKnownMasterKey, true, false},
		{"31 characters", strings.Repeat("q", 31), true, false},
		{"31 three-byte characters", strings.Repeat("€", 31), true, false},
		{"32 times a", strings.Repeat("a", 32), true, true},
		{"32 two-byte characters", strings.Repeat("é", 32), true, true},
		{"a pattern repeated", strings.Repeat("ab12", 10), true, true},
		{"a row of the keyboard", "qwertyuiopasdfghjklzxcvbnm1234567890", true, true},
		{"words", "correct-horse-battery-staple-correct-horse", true, true},
		{"a random key repeated", strongKey + strongKey + strongKey, true, true},
		{"32 random base62 characters", strongKey, false, false},
		{"random hex", "9f3c1a7e5b2d8f40c6e19a3b7d5f2e8c", false, false},
		{"random base64 with padding", "q8Zr3Xv+Lp0/Ty7NcW4mKb1sHd9Ue6Ji2Ao5Gf8ERtY=", false, false},
		{"long", strongKey + otherStrongKey, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, logs := captureLogger(t)
			mk, err := NewMasterKey(tt.key, false, logger)
			if tt.wantInsecure {
				if !errors.Is(err, ErrInsecureMasterKey) || mk != nil {
					t.Fatalf("NewMasterKey = %v, %v; want ErrInsecureMasterKey", mk, err)
				}
				if errors.Is(err, ErrWeakMasterKey) != tt.wantWeak {
					t.Errorf("NewMasterKey = %v; wraps ErrWeakMasterKey %v, want %v", err, !tt.wantWeak, tt.wantWeak)
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

	if _, err := NewMasterKey(wellKnownMasterKey, true, nil); err != nil {
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
		{"default", wellKnownMasterKey, false},
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
	// would show. The keys are weak, and allowed: only Check is tested.
	for _, n := range []int{255, 256, 257, 512, 513, 5000} {
		key := strings.Repeat("k", n-1) + "!"
		mk, err := NewMasterKey(key, true, slog.New(slog.DiscardHandler))
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
