package nmauth

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
	"testing"
)

// netclientSecret makes a host password as netclient does
// (RandomString(32) in Netmaker's logic/util.go): 32 random bytes written
// in standard base32, cut to 32 characters.
func netclientSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base32.StdEncoding.EncodeToString(b)[:32]
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// TestMachineDigestForm: the stored form names its root secret, holds no
// trace of the secret, and binds the host: two hosts with one secret, or
// one host under two root secrets, store different digests.
func TestMachineDigestForm(t *testing.T) {
	r1, err := newKeyRing([][]byte{randomBytes(32)})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := newKeyRing([][]byte{randomBytes(32)})
	if err != nil {
		t.Fatal(err)
	}
	secret := netclientSecret()
	d := r1.DigestMachineSecret("host-a", secret)
	if !strings.HasPrefix(d, "$nmauth-hmac-sha256$k="+r1.Signer().ID+"$") || strings.Contains(d, secret) {
		t.Fatalf("stored form %q", d)
	}
	for _, other := range []string{r1.DigestMachineSecret("host-b", secret), r2.DigestMachineSecret("host-a", secret)} {
		if other == d {
			t.Errorf("two digests are equal: %q", d)
		}
	}
	if ok, upgrade, err := r1.CheckMachineSecret(d, "host-a", secret); !ok || upgrade || err != nil {
		t.Errorf("right secret: ok %v, upgrade %v, err %v", ok, upgrade, err)
	}
	for _, c := range []struct{ name, secret string }{{"host-b", secret}, {"host-a", netclientSecret()}, {"host-a", secret[:31]}} {
		if ok, _, err := r1.CheckMachineSecret(d, c.name, c.secret); ok || err != nil {
			t.Errorf("%s/%q: ok %v, err %v", c.name, c.secret, ok, err)
		}
	}
	if _, _, err := r2.CheckMachineSecret(d, "host-a", secret); err == nil {
		t.Error("a digest under a root secret not configured was checked")
	}
	for _, bad := range []string{
		"$nmauth-hmac-sha256$k=" + r1.Signer().ID,
		"$nmauth-hmac-sha256$k=zz" + r1.Signer().ID[2:] + d[len(d)-44:],
		d[:len(d)-1],
		d + "A",
		strings.Replace(d, "k=", "k=0", 1),
	} {
		if _, _, err := r1.CheckMachineSecret(bad, "host-a", secret); err == nil {
			t.Errorf("malformed %q was checked", bad)
		}
	}
}
