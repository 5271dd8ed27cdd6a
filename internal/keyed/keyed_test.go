package keyed

import (
	"bytes"
	"crypto/rand"
	"strings"
	"testing"
)

func TestFormatSplit(t *testing.T) {
	id, secret, err := Draw(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	mac := bytes.Repeat([]byte{0xa5}, 32)
	cred := Format("nmauth_at_", id, secret, mac)
	if len(cred) != Len("nmauth_at_") {
		t.Fatalf("len(%q) = %d, want %d", cred, len(cred), Len("nmauth_at_"))
	}
	gotID, gotSecret, check, ok := Split("nmauth_at_", cred)
	if !ok || gotID != id || gotSecret != secret || !bytes.Equal(check, mac[:CheckBytes]) {
		t.Fatalf("Split(%q) = %q, %q, %x, %v", cred, gotID, gotSecret, check, ok)
	}
	if _, _, _, ok := Split("nmauth_ek_", cred); ok {
		t.Error("a credential under another prefix was read")
	}
}

func TestSplitRefuses(t *testing.T) {
	id, secret, _ := Draw(bytes.NewReader(make([]byte, IDBytes+SecretBytes)))
	good := Format("p_", id, secret, make([]byte, 32))
	// The last character of an unpadded base32 value of 10 bytes carries
	// no ignored bits, but that of 16 bytes does: "A" and "B" decode alike
	// at the end of the check, and only one spelling is accepted.
	other := good[:len(good)-1] + "B"
	for name, cred := range map[string]string{
		"empty":            "",
		"prefix only":      "p_",
		"short":            good[:len(good)-1],
		"long":             good + "A",
		"four parts":       strings.Replace(good, secret, secret[:10]+"_"+secret[11:], 1),
		"lower case":       strings.ToLower(good),
		"second spelling":  other,
		"no prefix":        "q_" + good[2:],
		"padding in value": good[:len(good)-2] + "==",
	} {
		if _, _, _, ok := Split("p_", cred); ok {
			t.Errorf("%s: Split(%q) accepted it", name, cred)
		}
	}
	if _, _, _, ok := Split("p_", good); !ok {
		t.Errorf("Split(%q) refused a well-formed credential", good)
	}
}

func TestDrawShortReader(t *testing.T) {
	if _, _, err := Draw(bytes.NewReader(make([]byte, IDBytes))); err == nil {
		t.Error("Draw took an id and secret from too few random bytes")
	}
}
