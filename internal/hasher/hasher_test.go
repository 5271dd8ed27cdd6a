package hasher

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/nmauth/nmauth/internal/gate"
	"github.com/nmauth/nmauth/internal/hashfmt"
)

var errFull = errors.New("hasher test: full")

// cheap returns a hasher of one slot whose argon2id is a cheap stand-in.
func cheap() *Hasher[string] {
	g := gate.New[string](1, 0, time.Second, func() error { return errFull }, func() error { return errFull })
	h := New(g, nil)
	h.ArgonKey = func(password, salt []byte, _, _ uint32, _ uint8, keyLen uint32) []byte {
		return bytes.Repeat(append(password, salt...), int(keyLen))[:keyLen]
	}
	return h
}

func TestHashVerify(t *testing.T) {
	h := cheap()
	encoded, err := h.Hash(context.Background(), "right password")
	if err != nil {
		t.Fatal(err)
	}
	if hashfmt.Identify(encoded) != hashfmt.Argon2id {
		t.Fatalf("hash %q is no argon2id", encoded)
	}
	for pw, want := range map[string]bool{"right password": true, "wrong password": false} {
		ok, upgrade, err := h.Verify(context.Background(), encoded, pw)
		if ok != want || upgrade || err != nil {
			t.Errorf("Verify(%q) = %v, %v, %v; want %v, false, nil", pw, ok, upgrade, err, want)
		}
	}
	if running, waiting := h.Gate.Load(); running != 0 || waiting != 0 {
		t.Errorf("gate holds %d, %d after the calls; want none", running, waiting)
	}
	if _, _, err := h.Verify(context.Background(), "$md5$x", "pw"); !errors.Is(err, hashfmt.ErrMalformed) {
		t.Errorf("Verify of an unknown format: %v; want ErrMalformed", err)
	}
}

func TestDummy(t *testing.T) {
	h := cheap()
	d := h.Dummy()
	if _, err := hashfmt.ParseArgon2id(d); err != nil || h.Dummy() != d {
		t.Fatalf("dummy %q: %v, or not built once", d, err)
	}
	if err := h.VerifyDummy(context.Background(), "anything"); err != nil {
		t.Fatal(err)
	}
}

func TestLimits(t *testing.T) {
	for _, tc := range []struct{ c, q, limit, bound int }{
		{0, 0, runtime.NumCPU(), DefaultQueue},
		{3, -1, 3, 0},
		{2, 5, 2, 5},
	} {
		if l, b := Limits(tc.c, tc.q); l != tc.limit || b != tc.bound {
			t.Errorf("Limits(%d, %d) = %d, %d; want %d, %d", tc.c, tc.q, l, b, tc.limit, tc.bound)
		}
	}
}
