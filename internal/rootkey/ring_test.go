package rootkey

import (
	"bytes"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nmauth/nmauth/internal/hashfmt"
)

func testRing(t *testing.T, secrets ...string) *Ring {
	t.Helper()
	var bs [][]byte
	for _, s := range secrets {
		bs = append(bs, []byte(strings.Repeat(s, 32)))
	}
	r, err := NewRing(bs, []string{"user", "host"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRingRefuses: no secret, a short one and one listed twice make no
// ring.
func TestRingRefuses(t *testing.T) {
	a := []byte(strings.Repeat("a", 32))
	for name, secrets := range map[string][][]byte{
		"none":  nil,
		"short": {a[:31]},
		"twice": {a, bytes.Clone(a)},
	} {
		if _, err := NewRing(secrets, []string{"user"}); err == nil {
			t.Errorf("%s: a ring was made", name)
		}
	}
}

// TestMachineMAC: the MAC is the same between calls and depends on the
// host's name, its length included, and on the root secret.
func TestMachineMAC(t *testing.T) {
	r := testRing(t, "a", "b")
	k := r.Signer()
	m := k.MachineMAC("host-a", "secret")
	if k.MachineMAC("host-a", "secret") != m {
		t.Error("MachineMAC differs between calls")
	}
	if k.MachineMAC("host-b", "secret") == m || k.MachineMAC("host-", "asecret") == m {
		t.Error("MachineMAC does not depend on the host's name")
	}
	if r.Keys[1].MachineMAC("host-a", "secret") == m {
		t.Error("MachineMAC does not depend on the root secret")
	}
}

// TestMachineDigestAcrossSecrets: a digest under an older root secret
// still checks and asks for an upgrade; one under a secret the ring does
// not hold is malformed, not a wrong secret.
func TestMachineDigestAcrossSecrets(t *testing.T) {
	old := testRing(t, "b")
	r := testRing(t, "a", "b")
	stored := old.DigestMachineSecret("h1", "s3cret")
	if ok, upgrade, err := r.CheckMachineSecret(stored, "h1", "s3cret"); !ok || !upgrade || err != nil {
		t.Fatalf("older secret's digest: ok %v, upgrade %v, err %v; want true, true, nil", ok, upgrade, err)
	}
	if ok, _, err := r.CheckMachineSecret(stored, "h1", "wrong"); ok || err != nil {
		t.Fatalf("wrong secret: ok %v, err %v", ok, err)
	}
	if ok, upgrade, err := r.CheckMachineSecret(r.DigestMachineSecret("h1", "s3cret"), "h1", "s3cret"); !ok || upgrade || err != nil {
		t.Fatalf("signer's digest: ok %v, upgrade %v, err %v; want true, false, nil", ok, upgrade, err)
	}
	other := testRing(t, "c").DigestMachineSecret("h1", "s3cret")
	if _, _, err := r.CheckMachineSecret(other, "h1", "s3cret"); !errors.Is(err, hashfmt.ErrMalformed) {
		t.Fatalf("unknown secret's digest: err %v, want ErrMalformed", err)
	}
}

// TestRingSealsAndSigns: a TOTP secret sealed under an older key opens
// and is not the signer's; an enrollment signature checks under the ring
// that made it only; the JWT header names the key.
func TestRingSealsAndSigns(t *testing.T) {
	old := testRing(t, "b")
	r := testRing(t, "a", "b")
	sealed, err := old.SealTOTP(rand.Reader, "ann", []byte("0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.OpenTOTP("ann", sealed); err != nil || string(got) != "0123456789" || r.SealedBySigner(sealed) {
		t.Fatalf("open %q, %v; sealed by signer %v", got, err, r.SealedBySigner(sealed))
	}
	now := time.Now()
	sig := r.Signer().EnrollmentSignature("ann", "otpauth://x", 3, now.Add(time.Minute))
	if !r.CheckEnrollment("ann", "otpauth://x", sig, 3, now) || testRing(t, "c").CheckEnrollment("ann", "otpauth://x", sig, 3, now) {
		t.Fatal("an enrollment signature checks outside the ring that made it, or not in it")
	}
	if r.ByID(old.Signer().ID) == nil || r.ByID("none") != nil || r.IDs() != r.Keys[0].ID+", "+r.Keys[1].ID {
		t.Fatal("keys are not found by id")
	}
	if !r.MatchesAny(map[string]string{old.Signer().ID: old.Signer().Check}) || r.MatchesAny(map[string]string{r.Signer().ID: "x"}) {
		t.Fatal("MatchesAny")
	}
	if r.Signer().SignJWT(0, []byte("x")) == r.Signer().SignJWT(1, []byte("x")) {
		t.Fatal("two audiences sign alike")
	}
}
