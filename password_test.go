package nmauth

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/text/secure/precis"

	"github.com/nmauth/nmauth/internal/hashfmt"
)

const testPassword = "correct horse battery staple"

// argonCall records the parameters one argon2id run was asked for.
type argonCall struct {
	hashfmt.Params
	salt   []byte
	keyLen uint32
}

// recordingHasher returns a hasher whose argon2id work is replaced by a
// cheap stand-in that records its calls, for tests about parameters and
// flow rather than about the hash itself.
func recordingHasher(t *testing.T, rnd io.Reader) (*passwordHasher, func() []argonCall) {
	t.Helper()
	var mu sync.Mutex
	var calls []argonCall
	h := newPasswordHasher(2, 0, rnd)
	h.ArgonKey = func(password, salt []byte, time, memory uint32, threads uint8, keyLen uint32) []byte {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, argonCall{hashfmt.Params{Memory: memory, Time: time, Threads: threads}, bytes.Clone(salt), keyLen})
		return make([]byte, keyLen)
	}
	return h, func() []argonCall {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(calls)
	}
}

// noWorkHasher returns a hasher that fails the test if any hashing work
// starts: for inputs that must be refused before any is spent.
func noWorkHasher(t *testing.T) *passwordHasher {
	t.Helper()
	h := newPasswordHasher(1, 0, nil)
	h.ArgonKey = func(_, _ []byte, tm, m uint32, p uint8, kl uint32) []byte {
		t.Errorf("argon2id ran with m=%d t=%d p=%d keyLen=%d", m, tm, p, kl)
		return make([]byte, kl)
	}
	h.BcryptCompare = func(_, _ []byte) error {
		t.Error("bcrypt ran")
		return bcrypt.ErrMismatchedHashAndPassword
	}
	return h
}

// argonPHC builds a PHC string for password with the given parameters
// using the real argon2id.
func argonPHC(t testing.TB, password string, p hashfmt.Params, saltLen, keyLen int) string {
	t.Helper()
	salt := bytes.Repeat([]byte{0x5a}, saltLen)
	key := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, uint32(keyLen))
	return hashfmt.Argon2idHash{Params: p, Salt: salt, Key: key}.Encode()
}

func bcryptHash(t testing.TB, password string) string {
	t.Helper()
	b, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPasswordHashRoundTrip(t *testing.T) {
	h := newPasswordHasher(2, 0, nil)
	ctx := context.Background()
	encoded, err := h.Hash(ctx, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(encoded, testPassword) {
		t.Fatalf("hash %q contains the password", encoded)
	}

	ok, upgrade, err := h.Verify(ctx, encoded, testPassword)
	if err != nil || !ok || upgrade {
		t.Errorf("verify(right password) = %v, %v, %v; want true, false, nil", ok, upgrade, err)
	}
	for _, wrong := range []string{"", "correct horse battery stapl", testPassword + " ", "Correct horse battery staple"} {
		ok, upgrade, err := h.Verify(ctx, encoded, wrong)
		if err != nil || ok || upgrade {
			t.Errorf("verify(%q) = %v, %v, %v; want false, false, nil", wrong, ok, upgrade, err)
		}
	}

	again, err := h.Hash(ctx, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	if again == encoded {
		t.Error("two hashes of one password are equal; salts are not fresh")
	}
}

func TestPasswordHashPHCFormat(t *testing.T) {
	salt := []byte("0123456789abcdef")
	h, calls := recordingHasher(t, bytes.NewReader(salt))
	encoded, err := h.Hash(context.Background(), testPassword)
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Split(encoded, "$")
	if len(fields) != 6 || fields[0] != "" {
		t.Fatalf("hash %q does not have 6 $-separated fields", encoded)
	}
	if fields[1] != "argon2id" || fields[2] != "v=19" || fields[3] != "m=19456,t=2,p=1" {
		t.Errorf("hash %q: algorithm, version or parameters wrong", encoded)
	}
	gotSalt, err := base64.RawStdEncoding.DecodeString(fields[4])
	if err != nil || !bytes.Equal(gotSalt, salt) {
		t.Errorf("salt field %q = %q, %v; want the bytes from rnd", fields[4], gotSalt, err)
	}
	key, err := base64.RawStdEncoding.DecodeString(fields[5])
	if err != nil || len(key) != 32 {
		t.Errorf("key field %q: %d bytes, %v; want 32", fields[5], len(key), err)
	}
	if strings.Count(encoded, "=") != 4 {
		t.Errorf("hash %q carries base64 padding", encoded)
	}
	want := argonCall{hashfmt.Params{Memory: 19456, Time: 2, Threads: 1}, salt, 32}
	if c := calls(); len(c) != 1 || c[0].Params != want.Params || !bytes.Equal(c[0].salt, salt) || c[0].keyLen != 32 {
		t.Errorf("argon2id calls = %+v; want one with %+v", c, want)
	}
}

func TestPasswordHashRandomFailure(t *testing.T) {
	h := noWorkHasher(t)
	h.Rand = iotest.ErrReader(errors.New("entropy gone"))
	if encoded, err := h.Hash(context.Background(), testPassword); err == nil {
		t.Fatalf("hash = %q with a failing rnd; want an error", encoded)
	}
}

func TestVerifyBcrypt(t *testing.T) {
	h := newPasswordHasher(2, 0, nil)
	ctx := context.Background()
	generated := bcryptHash(t, testPassword)
	for _, prefix := range []string{"$2a$", "$2b$", "$2y$"} {
		t.Run(prefix, func(t *testing.T) {
			encoded := prefix + generated[4:]
			ok, upgrade, err := h.Verify(ctx, encoded, testPassword)
			if err != nil || !ok || !upgrade {
				t.Errorf("verify(right password) = %v, %v, %v; want true, true, nil", ok, upgrade, err)
			}
			ok, upgrade, err = h.Verify(ctx, encoded, "wrong password")
			if err != nil || ok || upgrade {
				t.Errorf("verify(wrong password) = %v, %v, %v; want false, false, nil", ok, upgrade, err)
			}
		})
	}
}

func TestVerifyArgonUpgrade(t *testing.T) {
	tests := []struct {
		name        string
		params      hashfmt.Params
		saltLen     int
		keyLen      int
		wantUpgrade bool
	}{
		{"current", hashfmt.Params{Memory: 19456, Time: 2, Threads: 1}, 16, 32, false},
		{"less memory", hashfmt.Params{Memory: 8192, Time: 2, Threads: 1}, 16, 32, true},
		{"fewer passes", hashfmt.Params{Memory: 19456, Time: 1, Threads: 1}, 16, 32, true},
		{"short salt", hashfmt.Params{Memory: 19456, Time: 2, Threads: 1}, 8, 32, true},
		{"short key", hashfmt.Params{Memory: 19456, Time: 2, Threads: 1}, 16, 16, true},
		{"more passes", hashfmt.Params{Memory: 19456, Time: 3, Threads: 1}, 16, 32, false},
		{"more memory and lanes", hashfmt.Params{Memory: 32768, Time: 2, Threads: 2}, 16, 32, false},
		{"longer salt and key", hashfmt.Params{Memory: 19456, Time: 2, Threads: 1}, 32, 64, false},
	}
	h := newPasswordHasher(2, 0, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			encoded := argonPHC(t, testPassword, tt.params, tt.saltLen, tt.keyLen)
			ok, upgrade, err := h.Verify(context.Background(), encoded, testPassword)
			if err != nil || !ok || upgrade != tt.wantUpgrade {
				t.Errorf("verify = %v, %v, %v; want true, %v, nil", ok, upgrade, err, tt.wantUpgrade)
			}
			ok, upgrade, err = h.Verify(context.Background(), encoded, "wrong password")
			if err != nil || ok || upgrade {
				t.Errorf("verify(wrong password) = %v, %v, %v; want false, false, nil", ok, upgrade, err)
			}
		})
	}
}

func TestVerifyMalformedHash(t *testing.T) {
	b64 := func(n int) string { return base64.RawStdEncoding.EncodeToString(bytes.Repeat([]byte{7}, n)) }
	salt, key := b64(16), b64(32)
	good := "$argon2id$v=19$m=19456,t=2,p=1$" + salt + "$" + key
	bc := bcryptHash(t, testPassword)
	tests := []struct{ name, encoded string }{
		{"empty", ""},
		{"plain text", testPassword},
		{"argon2i version 16", strings.Replace(strings.Replace(good, "argon2id", "argon2i", 1), "v=19", "v=16", 1)},
		{"argon2d", strings.Replace(good, "argon2id", "argon2d", 1)},
		{"upper-case name", strings.Replace(good, "argon2id", "ARGON2ID", 1)},
		{"version 16", strings.Replace(good, "v=19", "v=16", 1)},
		{"no version", "$argon2id$m=19456,t=2,p=1$" + salt + "$" + key},
		{"no key", "$argon2id$v=19$m=19456,t=2,p=1$" + salt},
		{"extra field", good + "$" + key},
		{"trailing dollar", good + "$"},
		{"params reordered", "$argon2id$v=19$t=2,m=19456,p=1$" + salt + "$" + key},
		{"param missing", "$argon2id$v=19$m=19456,t=2$" + salt + "$" + key},
		{"extra param", "$argon2id$v=19$m=19456,t=2,p=1,k=1$" + salt + "$" + key},
		{"leading zero", "$argon2id$v=19$m=019456,t=2,p=1$" + salt + "$" + key},
		{"plus sign", "$argon2id$v=19$m=+19456,t=2,p=1$" + salt + "$" + key},
		{"hex param", "$argon2id$v=19$m=0x4c00,t=2,p=1$" + salt + "$" + key},
		{"empty param", "$argon2id$v=19$m=,t=2,p=1$" + salt + "$" + key},
		{"space in params", "$argon2id$v=19$m=19456, t=2,p=1$" + salt + "$" + key},
		{"padded salt", "$argon2id$v=19$m=19456,t=2,p=1$" + salt + "==$" + key},
		{"url base64", "$argon2id$v=19$m=19456,t=2,p=1$" + strings.Repeat("-_", 11) + "$" + key},
		{"newline in salt", "$argon2id$v=19$m=19456,t=2,p=1$" + salt[:4] + "\n" + salt[4:] + "$" + key},
		{"carriage return in key", "$argon2id$v=19$m=19456,t=2,p=1$" + salt + "$" + key[:8] + "\r" + key[8:]},
		{"non-canonical base64", "$argon2id$v=19$m=19456,t=2,p=1$" + salt[:len(salt)-1] + "B$" + key},
		{"salt too short", "$argon2id$v=19$m=19456,t=2,p=1$" + b64(7) + "$" + key},
		{"salt too long", "$argon2id$v=19$m=19456,t=2,p=1$" + b64(65) + "$" + key},
		{"key too short", "$argon2id$v=19$m=19456,t=2,p=1$" + salt + "$" + b64(15)},
		{"key too long", "$argon2id$v=19$m=19456,t=2,p=1$" + salt + "$" + b64(65)},
		{"empty key", "$argon2id$v=19$m=19456,t=2,p=1$" + salt + "$"},
		{"bcrypt 2x", "$2x$" + bc[4:]},
		{"bcrypt 2", "$2$" + bc[4:]},
		{"bcrypt truncated", bc[:59]},
		{"bcrypt extended", bc + "A"},
		{"bcrypt bad cost", bc[:4] + "1a" + bc[6:]},
		{"bcrypt no cost separator", bc[:6] + "x" + bc[7:]},
		{"bcrypt bad character", bc[:20] + "!" + bc[21:]},
		{"bcrypt multi-byte character", bc[:57] + "é" + bc[59:]},
	}
	h := noWorkHasher(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, upgrade, err := h.Verify(context.Background(), tt.encoded, testPassword)
			if ok || upgrade || !errors.Is(err, hashfmt.ErrMalformed) {
				t.Errorf("verify(%q) = %v, %v, %v; want false, false, hashfmt.ErrMalformed", tt.encoded, ok, upgrade, err)
			}
		})
	}
}

func TestVerifyAbsurdParams(t *testing.T) {
	salt := base64.RawStdEncoding.EncodeToString(make([]byte, 16))
	key := base64.RawStdEncoding.EncodeToString(make([]byte, 32))
	phc := func(params string) string { return "$argon2id$v=19$" + params + "$" + salt + "$" + key }
	bc := bcryptHash(t, testPassword)
	refused := []struct{ name, encoded, named string }{
		{"memory above 64 MiB", phc("m=65537,t=1,p=1"), "m=65537 above 65536"},
		{"memory of 1 GiB", phc("m=1048576,t=2,p=1"), "m=1048576"},
		{"memory overflows uint32", phc("m=4294967296,t=2,p=1"), "m=4294967296"},
		{"memory huge", phc("m=99999999999999999999,t=2,p=1"), "m=99999999999999999999"},
		{"passes above 16", phc("m=19456,t=17,p=1"), "t=17"},
		{"work above 64 MiB times 4 passes", phc("m=65536,t=5,p=1"), "m*t"},
		{"work of 19 MiB times 16 passes", phc("m=19456,t=16,p=1"), "m*t"},
		{"lanes above 4", phc("m=19456,t=2,p=5"), "p=5"},
		{"lanes 16", phc("m=19456,t=2,p=16"), "p=16"},
		{"lanes overflow uint8", phc("m=19456,t=2,p=257"), "p=257"},
		{"zero passes", phc("m=19456,t=0,p=1"), "too small"},
		{"zero lanes", phc("m=19456,t=2,p=0"), "too small"},
		{"zero memory", phc("m=0,t=2,p=1"), "too small"},
		{"memory below 8 per lane", phc("m=31,t=2,p=4"), "too small"},
		{"bcrypt cost 15", bc[:4] + "15" + bc[6:], "cost 15"},
		{"bcrypt cost 17", bc[:4] + "17" + bc[6:], "cost 17"},
		{"bcrypt cost 31", bc[:4] + "31" + bc[6:], "cost 31"},
		{"bcrypt cost 99", bc[:4] + "99" + bc[6:], "cost 99"},
		{"bcrypt cost 3", bc[:4] + "03" + bc[6:], "cost 3"},
	}
	h := noWorkHasher(t)
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			ok, _, err := h.Verify(context.Background(), tt.encoded, testPassword)
			if ok || !errors.Is(err, hashfmt.ErrMalformed) || !strings.Contains(err.Error(), tt.named) {
				t.Errorf("verify(%q) = %v, %v; want hashfmt.ErrMalformed naming %q", tt.encoded, ok, err, tt.named)
			}
		})
	}

	// The bounds themselves are accepted: the limits refuse only what is
	// beyond them.
	for _, largest := range []struct {
		params string
		want   hashfmt.Params
	}{
		{"m=65536,t=4,p=4", hashfmt.Params{Memory: 64 << 10, Time: 4, Threads: 4}},
		{"m=16384,t=16,p=1", hashfmt.Params{Memory: 16 << 10, Time: 16, Threads: 1}},
	} {
		t.Run("largest accepted "+largest.params, func(t *testing.T) {
			h, calls := recordingHasher(t, nil)
			ok, _, err := h.Verify(context.Background(), phc(largest.params), testPassword)
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			if !ok { // the stand-in derives zeros, which is the stored key
				t.Error("verify = false with the stand-in key")
			}
			if c := calls(); len(c) != 1 || c[0].Params != largest.want || c[0].keyLen != 32 {
				t.Errorf("argon2id calls = %+v; want one with %+v", c, largest.want)
			}
		})
	}
	t.Run("bcrypt cost 14 accepted", func(t *testing.T) {
		h := newPasswordHasher(1, 0, nil)
		var got []byte
		h.BcryptCompare = func(hash, _ []byte) error { got = hash; return bcrypt.ErrMismatchedHashAndPassword }
		encoded := bc[:4] + "14" + bc[6:]
		ok, _, err := h.Verify(context.Background(), encoded, testPassword)
		if ok || err != nil || string(got) != encoded {
			t.Errorf("verify = %v, %v, compared %q; want false, nil, the hash", ok, err, got)
		}
	})
}

// blockingHasher returns a hasher with one slot and a queue of one whose
// hashing work announces itself on entered and then waits for release.
func blockingHasher(t *testing.T) (h *passwordHasher, entered chan struct{}, release chan struct{}, runs *atomic.Int32) {
	t.Helper()
	h = newPasswordHasher(1, 1, nil)
	entered, release, runs = make(chan struct{}), make(chan struct{}), new(atomic.Int32)
	h.ArgonKey = func(_, _ []byte, _, _ uint32, _ uint8, keyLen uint32) []byte {
		runs.Add(1)
		entered <- struct{}{}
		<-release
		return make([]byte, keyLen)
	}
	h.BcryptCompare = func(_, _ []byte) error {
		runs.Add(1)
		entered <- struct{}{}
		<-release
		return bcrypt.ErrMismatchedHashAndPassword
	}
	return h, entered, release, runs
}

// waitForTickets yields until n callers hold a ticket, that is run or
// wait. It never sleeps; a caller that never arrives fails the test by its
// deadline.
func waitForTickets(h *passwordHasher, n int) {
	for {
		running, waiting := h.Gate.Load()
		if running+waiting >= n {
			return
		}
		runtime.Gosched()
	}
}

func TestPasswordHasherBound(t *testing.T) {
	validArgon := argonPHC(t, testPassword, hashfmt.Params{Memory: 64, Time: 1, Threads: 1}, 16, 32)
	validBcrypt := bcryptHash(t, testPassword)
	thirdCallers := []struct {
		name string
		call func(context.Context, *passwordHasher) error
	}{
		{"hash", func(ctx context.Context, h *passwordHasher) error { _, err := h.Hash(ctx, testPassword); return err }},
		{"verify argon2id", func(ctx context.Context, h *passwordHasher) error {
			_, _, err := h.Verify(ctx, validArgon, testPassword)
			return err
		}},
		{"verify bcrypt", func(ctx context.Context, h *passwordHasher) error {
			_, _, err := h.Verify(ctx, validBcrypt, testPassword)
			return err
		}},
		{"verifyDummy", func(ctx context.Context, h *passwordHasher) error { return h.VerifyDummy(ctx, testPassword) }},
	}
	for _, third := range thirdCallers {
		t.Run(third.name, func(t *testing.T) {
			h, entered, release, runs := blockingHasher(t)
			ctx := context.Background()

			// First caller holds the only slot.
			first := make(chan error, 1)
			go func() { _, err := h.Hash(ctx, testPassword); first <- err }()
			<-entered

			// Second caller waits in the only queue place.
			waitCtx, cancel := context.WithCancel(ctx)
			second := make(chan error, 1)
			go func() { _, err := h.Hash(waitCtx, testPassword); second <- err }()
			waitForTickets(h, 2)

			// Third caller is turned away at once.
			err := third.call(ctx, h)
			var overloaded *RetryError
			if !errors.Is(err, ErrOverloaded) || errors.Is(err, ErrThrottled) || !errors.As(err, &overloaded) || overloaded.RetryAfter != time.Second {
				t.Fatalf("third caller got %v; want *RetryError{Reason: ErrOverloaded, RetryAfter: 1s}", err)
			}

			// The waiting caller gives up when its context ends.
			cancel()
			if err := <-second; !errors.Is(err, context.Canceled) {
				t.Errorf("waiting caller got %v; want context.Canceled", err)
			}

			// Its place is free again: a new caller may wait, and runs
			// once the first is done.
			fourth := make(chan error, 1)
			go func() { _, _, err := h.Verify(ctx, validArgon, testPassword); fourth <- err }()
			waitForTickets(h, 2)
			close(release)
			if err := <-first; err != nil {
				t.Errorf("first caller: %v", err)
			}
			<-entered
			if err := <-fourth; err != nil {
				t.Errorf("fourth caller: %v", err)
			}
			if n := runs.Load(); n != 2 {
				t.Errorf("hashing ran %d times; want 2 (the refused and cancelled callers must not run)", n)
			}
			if running, waiting := h.Gate.Load(); running != 0 || waiting != 0 {
				t.Errorf("after all callers: %d running, %d waiting; want none", running, waiting)
			}
		})
	}
}

func TestPasswordHasherEndedContext(t *testing.T) {
	h := noWorkHasher(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Hash(ctx, testPassword); !errors.Is(err, context.Canceled) {
		t.Errorf("hash: %v; want context.Canceled", err)
	}
	if ok, _, err := h.Verify(ctx, bcryptHash(t, testPassword), testPassword); ok || !errors.Is(err, context.Canceled) {
		t.Errorf("verify: %v, %v; want false, context.Canceled", ok, err)
	}
	if err := h.VerifyDummy(ctx, testPassword); !errors.Is(err, context.Canceled) {
		t.Errorf("verifyDummy: %v; want context.Canceled", err)
	}
}

func TestPasswordHasherConcurrencyLimit(t *testing.T) {
	const limit, callers = 2, 24
	h := newPasswordHasher(limit, callers, nil)
	var inFlight, peak atomic.Int32
	h.ArgonKey = func(_, _ []byte, _, _ uint32, _ uint8, keyLen uint32) []byte {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		runtime.Gosched()
		inFlight.Add(-1)
		return make([]byte, keyLen)
	}
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			encoded, err := h.Hash(context.Background(), testPassword)
			if err == nil {
				_, _, err = h.Verify(context.Background(), encoded, testPassword)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("caller within the queue size failed: %v", err)
		}
	}
	if p := peak.Load(); p > limit || p < 1 {
		t.Errorf("peak concurrent hashing = %d; want 1..%d", p, limit)
	}
}

func TestNewPasswordHasherDefaults(t *testing.T) {
	tests := []struct {
		concurrency, queue     int
		wantSlots, wantTickets int
	}{
		{0, 0, runtime.NumCPU(), runtime.NumCPU() + 64},
		{-3, 5, runtime.NumCPU(), runtime.NumCPU() + 5},
		{4, -1, 4, 4},
		{1, 1, 1, 2},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d,%d", tt.concurrency, tt.queue), func(t *testing.T) {
			h := newPasswordHasher(tt.concurrency, tt.queue, nil)
			if h.Gate.Limit() != tt.wantSlots || h.Gate.Limit()+h.Gate.Bound() != tt.wantTickets {
				t.Errorf("slots %d, queue %d; want %d, %d", h.Gate.Limit(), h.Gate.Bound(), tt.wantSlots, tt.wantTickets-tt.wantSlots)
			}
			if h.Rand == nil {
				t.Error("nil rnd not replaced by crypto/rand")
			}
		})
	}
}

func TestVerifyDummy(t *testing.T) {
	h, calls := recordingHasher(t, nil)
	for range 3 {
		if err := h.VerifyDummy(context.Background(), testPassword); err != nil {
			t.Fatalf("verifyDummy: %v", err)
		}
	}
	c := calls()
	if len(c) != 3 {
		t.Fatalf("argon2id ran %d times for 3 dummy checks", len(c))
	}
	for _, call := range c {
		if call.Params != hashfmt.Current() || call.keyLen != hashfmt.KeyLen || len(call.salt) != hashfmt.SaltLen {
			t.Errorf("dummy work %+v differs from a current hash's", call)
		}
		if !bytes.Equal(call.salt, c[0].salt) {
			t.Error("dummy hash changed between calls; want one built once")
		}
	}
	if ok, _, err := h.Verify(context.Background(), h.Dummy(), testPassword); ok || err != nil {
		t.Errorf("verify against the dummy = %v, %v; want false, nil", ok, err)
	}
}

func TestVerifyDummyRealWork(t *testing.T) {
	h := newPasswordHasher(1, 0, nil)
	if err := h.VerifyDummy(context.Background(), testPassword); err != nil {
		t.Fatalf("verifyDummy: %v", err)
	}
	dummy, err := hashfmt.ParseArgon2id(h.Dummy())
	if err != nil {
		t.Fatalf("dummy hash %q does not parse: %v", h.Dummy(), err)
	}
	if dummy.Params != hashfmt.Current() || dummy.WeakerThanCurrent() {
		t.Errorf("dummy parameters %+v; want the current ones", dummy.Params)
	}
}

func TestCheckPasswordPolicy(t *testing.T) {
	tests := []struct {
		name, password, want string
	}{
		{"ascii", testPassword, testPassword},
		{"exactly 8 bytes", "12345678", "12345678"},
		{"exactly 1024 bytes", strings.Repeat("p", 1024), strings.Repeat("p", 1024)},
		{"no-break space", "correct\u00a0horse", "correct horse"},
		{"em space", "correct\u2003horse", "correct horse"},
		{"ideographic space", "correct\u3000horse", "correct horse"},
		{"decomposed accent composed", "cafe\u0301-latte", "caf\u00e9-latte"},
		{"four two-byte letters are 8 bytes", "éééé", "éééé"},
		{"case kept", "PassWord", "PassWord"},
		{"inner ascii spaces kept", "a  b  c  d", "a  b  c  d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := checkPasswordPolicy(tt.password)
			if err != nil || got != tt.want {
				t.Errorf("checkPasswordPolicy = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestCheckPasswordPolicyRefuses(t *testing.T) {
	tests := []struct{ name, password string }{
		{"empty", ""},
		{"7 bytes", "1234567"},
		{"8 bytes written, 7 after NFC", "abcde\u0301f"},
		{"1025 bytes", strings.Repeat("p", 1025)},
		{"NUL", "password\x00"},
		{"tab", "pass\tword"},
		{"newline", "password\n"},
		{"escape", "pass\x1bword"},
		{"DEL", "pass\x7fword"},
		{"C1 control", "pass\u0085word"},
		{"invalid UTF-8", "pass\xffword"},
		{"unassigned code point", "password\U000e0fff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := checkPasswordPolicy(tt.password)
			if !errors.Is(err, ErrInvalidPassword) || got != "" {
				t.Fatalf("checkPasswordPolicy = %q, %v; want ErrInvalidPassword", got, err)
			}
			if tt.password != "" && strings.Contains(err.Error(), tt.password) {
				t.Errorf("error %q echoes the password", err)
			}
		})
	}
}

func TestPreparePassword(t *testing.T) {
	// Written with an ASCII space or a non-ASCII one, a password prepares
	// to the same string, so it matches whichever was used to set it.
	for _, pair := range [][2]string{
		{"correct\u00a0horse", "correct horse"},
		{"correct\u202fhorse", "correct horse"},
		{"cafe\u0301", "caf\u00e9"},
	} {
		a, errA := preparePassword(pair[0])
		b, errB := preparePassword(pair[1])
		if errA != nil || errB != nil || a != b {
			t.Errorf("preparePassword(%q) = %q, %v; preparePassword(%q) = %q, %v; want equal", pair[0], a, errA, pair[1], b, errB)
		}
	}
	// No length policy at login: a short password from an imported
	// system still prepares.
	if got, err := preparePassword("abc"); err != nil || got != "abc" {
		t.Errorf("preparePassword(short) = %q, %v; want it unchanged", got, err)
	}
	for _, bad := range []string{"", "pass\x00word", "pass\tword"} {
		if got, err := preparePassword(bad); !errors.Is(err, ErrInvalidPassword) || got != "" {
			t.Errorf("preparePassword(%q) = %q, %v; want ErrInvalidPassword", bad, got, err)
		}
	}
}

// TestPreparePasswordPrintableASCII holds the short cut preparePassword
// takes for a password of printable ASCII to what the OpaqueString profile
// gives: every such character, alone, between others and at either end,
// and random strings of them, prepare to themselves.
func TestPreparePasswordPrintableASCII(t *testing.T) {
	var cases []string
	for c := byte(' '); c <= '~'; c++ {
		cases = append(cases, string(c), "a"+string(c)+"b", string(c)+"x", "x"+string(c))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		b := make([]byte, 1+r.IntN(64))
		for i := range b {
			b[i] = byte(' ' + r.IntN('~'-' '+1))
		}
		cases = append(cases, string(b))
	}
	for _, pw := range cases {
		want, wantErr := precis.OpaqueString.String(pw)
		got, err := preparePassword(pw)
		if wantErr != nil || err != nil || got != want {
			t.Errorf("preparePassword(%q) = %q, %v; the profile gives %q, %v", pw, got, err, want, wantErr)
		}
	}
}

// fuzzHasher runs the real algorithms only for cheap parameters, and for
// the rest checks that what reaches them is within the bounds the parser
// promises, which is what keeps argon2.IDKey from panicking or allocating
// without limit.
func fuzzHasher(t *testing.T) *passwordHasher {
	h := newPasswordHasher(1, 0, nil)
	h.ArgonKey = func(password, salt []byte, tm, m uint32, p uint8, keyLen uint32) []byte {
		if tm < 1 || tm > hashfmt.MaxArgonTime || p < 1 || p > hashfmt.MaxArgonThreads || m < 8*uint32(p) || m > hashfmt.MaxArgonMemory ||
			keyLen < hashfmt.MinArgonKeyLen || keyLen > hashfmt.MaxArgonKeyLen || len(salt) < hashfmt.MinArgonSaltLen || len(salt) > hashfmt.MaxArgonSaltLen {
			t.Fatalf("argon2id reached with m=%d t=%d p=%d salt=%d key=%d", m, tm, p, len(salt), keyLen)
		}
		if m <= 256 && tm <= 2 {
			return argon2.IDKey(password, salt, tm, m, p, keyLen)
		}
		return make([]byte, keyLen)
	}
	h.BcryptCompare = func(hash, password []byte) error {
		if cost, err := bcrypt.Cost(hash); err == nil && cost > 5 {
			return bcrypt.ErrMismatchedHashAndPassword
		}
		return bcrypt.CompareHashAndPassword(hash, password)
	}
	return h
}

func FuzzVerifyPasswordHash(f *testing.F) {
	seeds := []string{
		argonPHC(f, "password", hashfmt.Params{Memory: 64, Time: 1, Threads: 1}, 16, 32),
		argonPHC(f, "password", hashfmt.Params{Memory: 256, Time: 2, Threads: 2}, 8, 16),
		"$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$" + base64.RawStdEncoding.EncodeToString(make([]byte, 32)),
		"$argon2id$v=19$m=1048577,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$c2FsdHNhbHRzYWx0c2FsdA",
		"$argon2id$v=19$m=8,t=0,p=0$c2FsdHNhbHRzYWx0c2FsdA$c2FsdHNhbHRzYWx0c2FsdA",
		bcryptHash(f, "password"),
		"$2y$04$abcdefghijklmnopqrstuu" + strings.Repeat("A", 31),
		"$2b$31$abcdefghijklmnopqrstuu" + strings.Repeat("A", 31),
		"$argon2id$v=19$m=10,t=1,p=1$00000000000$00000000000000\r0000000000",
		"", "$", "$$$$$", "$argon2id$", "$2a$", "password", "\x00\xff$argon2id$v=19$",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, encoded string) {
		h := fuzzHasher(t)
		ok, upgrade, err := h.Verify(context.Background(), encoded, "password")
		if err != nil && (ok || upgrade) {
			t.Fatalf("verify = %v, %v with error %v", ok, upgrade, err)
		}
		if upgrade && !ok {
			t.Fatal("upgrade reported for a wrong password")
		}
		if err != nil && !errors.Is(err, hashfmt.ErrMalformed) {
			t.Fatalf("verify error %v does not wrap hashfmt.ErrMalformed", err)
		}
		if _, perr := hashfmt.Importable(encoded); perr != nil && !strings.HasPrefix(encoded, hashfmt.Argon2idPrefix) && hashfmt.Identify(encoded) != hashfmt.Bcrypt && err == nil {
			t.Fatalf("unknown format %q accepted", encoded)
		}
		// The parser accepts only canonical strings: what it reads it
		// writes back byte for byte.
		if a, err := hashfmt.ParseArgon2id(encoded); err == nil && strings.HasPrefix(encoded, hashfmt.Argon2idPrefix) {
			if again := a.Encode(); again != encoded {
				t.Fatalf("parsed %q, re-encoded %q", encoded, again)
			}
		}
	})
}
