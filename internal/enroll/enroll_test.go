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

// TestNetmakerKeyOf: a key's type follows its limit, its uses remaining
// never go below zero, and a key without networks or tags lists empty
// networks and its name as its tag.
func TestNetmakerKeyOf(t *testing.T) {
	exp := time.Unix(1700000000, 0)
	k := NetmakerKeyOf(KeyBody{Name: "k", Uses: 3}, "id1", 1, false)
	if k.Type != NetmakerKeyUses || k.UsesRemaining != 2 || k.Value != "id1" || k.Relay != NetmakerNilUUID ||
		k.Networks == nil || len(k.Networks) != 0 || len(k.Tags) != 1 || k.Tags[0] != "k" || k.Revoked {
		t.Errorf("counted key = %+v", k)
	}
	if k := NetmakerKeyOf(KeyBody{Name: "k", Uses: 1}, "id1", 4, true); k.UsesRemaining != 0 || !k.Revoked {
		t.Errorf("used-up revoked key = %+v", k)
	}
	k = NetmakerKeyOf(KeyBody{Name: "k", Unlimited: true, ExpiresAt: exp, Tags: []string{"a", "b"}, Networks: []string{"n"}}, "id2", 9, false)
	if k.Type != NetmakerKeyTime || !k.Expiration.Equal(exp) || !k.Unlimited || k.UsesRemaining != 0 || len(k.Tags) != 2 || k.Networks[0] != "n" {
		t.Errorf("expiring key = %+v", k)
	}
	if k := NetmakerKeyOf(KeyBody{Name: "k", Unlimited: true}, "id3", 0, false); k.Type != NetmakerKeyUnlimited {
		t.Errorf("unlimited key = %+v", k)
	}
}

// TestParseKey: each profile's body is read in its own fields; the other
// profile's fields are not read.
func TestParseKey(t *testing.T) {
	k, err := ParseKey([]byte(`{"name":"k","networks":["n"],"uses":2}`), false)
	if err != nil || k.Name != "k" || k.Uses != 2 || len(k.Networks) != 1 {
		t.Errorf("spec body = %+v, %v", k, err)
	}
	k, err = ParseKey([]byte(`{"tags":["k"],"uses_remaining":2}`), true)
	if err != nil || k.Name != "k" || k.Uses != 2 {
		t.Errorf("Netmaker body = %+v, %v", k, err)
	}
	if k, err := ParseKey([]byte(`{"name":"k","tags":["t"],"uses_remaining":2}`), false); err != nil || k.Uses != 0 || k.Tags[0] != "t" {
		t.Errorf("the spec profile read Netmaker's uses: %+v, %v", k, err)
	}
	if _, err := ParseKey([]byte(`{"Name":"k"}`), false); err == nil {
		t.Error("the spec profile took a field in another case")
	}
	if _, err := ParseKey([]byte(`{"uses_remaining":2}`), true); !errors.As(err, new(RequestError)) {
		t.Errorf("a Netmaker key without tags: %v", err)
	}
}
