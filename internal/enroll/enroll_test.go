package enroll

import (
	"errors"
	"testing"
	"time"
)

// TestNetmakerTokenRoundTrip: the key of a token made on a server reads
// back out of it.
func TestNetmakerTokenRoundTrip(t *testing.T) {
	tok := NetmakerToken("nm.example.com", "the-key")
	if tok != "eyJzZXJ2ZXIiOiJubS5leGFtcGxlLmNvbSIsInZhbHVlIjoidGhlLWtleSJ9" {
		t.Errorf("NetmakerToken = %q", tok)
	}
	if key, err := NetmakerTokenKey(tok); err != nil || key != "the-key" {
		t.Errorf("NetmakerTokenKey = %q, %v", key, err)
	}
}

// TestNetmakerKeyBody: a Netmaker key is named by its first tag, and an
// expiry without uses admits any number of joins until then.
func TestNetmakerKeyBody(t *testing.T) {
	if _, err := (NetmakerKeyBody{Uses: 1}).Key(); !errors.As(err, new(RequestError)) {
		t.Errorf("a key without tags: %v", err)
	}
	k, err := NetmakerKeyBody{Expiration: 1700000000, Tags: []string{"k", "t"}, Networks: []string{"n"}}.Key()
	if err != nil || k.Name != "k" || !k.Unlimited || !k.ExpiresAt.Equal(time.Unix(1700000000, 0)) || len(k.Tags) != 2 || k.Networks[0] != "n" {
		t.Errorf("expiring key = %+v, %v", k, err)
	}
	k, err = NetmakerKeyBody{Uses: 3, Tags: []string{"k"}}.Key()
	if err != nil || k.Unlimited || k.Uses != 3 || !k.ExpiresAt.IsZero() {
		t.Errorf("counted key = %+v, %v", k, err)
	}
}
