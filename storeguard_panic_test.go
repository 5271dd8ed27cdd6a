package nmauth_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

// panickyStore is a MemoryStore whose UpdateUser panics while armed, as an
// application's Store with a bug would.
type panickyStore struct {
	*nmauth.MemoryStore
	armed atomic.Bool
}

func (s *panickyStore) UpdateUser(ctx context.Context, name string, fn func(*nmauth.User) error) error {
	if s.armed.Load() {
		var m map[string]int
		m[name]++ // a nil map write: the kind of bug that panics
	}
	return s.MemoryStore.UpdateUser(ctx, name, fn)
}

// lockedBuffer is a log destination safe for the server's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestStorePanicIsAnswered500 serves logins over a real loopback server
// from a Store whose UpdateUser panics: each such request gets a 500 in the
// envelope, the stack reaches the log once a second at most, the test
// binary (the process) lives on, and the next request is served.
func TestStorePanicIsAnswered500(t *testing.T) {
	store := &panickyStore{MemoryStore: nmauth.NewMemoryStore()}
	logs := &lockedBuffer{}
	secret := make([]byte, 32)
	rand.Read(secret)
	now := time.Now()
	auth, err := nmauth.New(nmauth.Config{
		Store:   store,
		Secrets: [][]byte{secret},
		Logger:  slog.New(slog.NewJSONHandler(logs, nil)),
		Now:     func() time.Time { return now }, // both panics fall in one second
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := auth.Admin().CreateUser(context.Background(), "alice", "correct horse battery staple"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(auth.Handler())
	defer srv.Close()
	login := func() (int, map[string]any) {
		t.Helper()
		resp, err := http.Post(srv.URL+"/api/users/adm/authenticate", "application/json",
			strings.NewReader(`{"username":"alice","password":"correct horse battery staple"}`))
		if err != nil {
			t.Fatalf("the server did not answer: %v", err)
		}
		defer resp.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("answer %d is not JSON: %v", resp.StatusCode, err)
		}
		return resp.StatusCode, body
	}

	store.armed.Store(true)
	for i := range 2 {
		status, body := login()
		if status != http.StatusInternalServerError || body["code"] != float64(500) || body["message"] != "internal error" {
			t.Fatalf("login %d with a panicking store: %d %v; want 500 with the generic message", i+1, status, body)
		}
	}
	log := logs.String()
	if n := strings.Count(log, `"msg":"store panicked"`); n != 1 {
		t.Errorf("%d lines say the store panicked, want 1 (two panics in one second):\n%s", n, log)
	}
	for _, want := range []string{`"op":"update user"`, "assignment to entry in nil map", "panickyStore).UpdateUser"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}

	store.armed.Store(false)
	if status, body := login(); status != http.StatusOK {
		t.Fatalf("login after the panics: %d %v; want 200", status, body)
	}
}

// TestNewRefusesNilStore checks that New refuses a Store that is nil, or a
// nil pointer of a Store type, which would fail only at its first use.
func TestNewRefusesNilStore(t *testing.T) {
	secret := make([]byte, 32)
	rand.Read(secret)
	for _, tc := range []struct {
		name  string
		store nmauth.Store
		want  string
	}{
		{"nil", nil, "Config.Store is required"},
		{"typed nil", (*nmauth.MemoryStore)(nil), "Config.Store is a nil *nmauth.MemoryStore"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auth, err := nmauth.New(nmauth.Config{Store: tc.store, Secrets: [][]byte{secret}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, %v; want an error saying %q", auth, err, tc.want)
			}
		})
	}
}
