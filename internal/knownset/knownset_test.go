package knownset

import (
	"fmt"
	"runtime"
	"testing"
)

func TestSet(t *testing.T) {
	s := New(1000)
	s.Add("host-1", "198.51.100.7")
	for _, tc := range []struct {
		account, client string
		want            bool
	}{
		{"host-1", "198.51.100.7", true},
		{"host-1", "198.51.100.8", false},
		{"host-2", "198.51.100.7", false},
		{"host-11", "98.51.100.7", false}, // the pair's parts do not run together
	} {
		if got := s.Has(tc.account, tc.client); got != tc.want {
			t.Errorf("Has(%q, %q) = %v; want %v", tc.account, tc.client, got, tc.want)
		}
	}
	if s.Len() != 1 {
		t.Errorf("Len = %d; want 1", s.Len())
	}
}

// TestOneAccountsChurn: one account's logins from a hundred addresses keep
// its newest four, the one it logs in from again among them, and forget
// no other account's.
func TestOneAccountsChurn(t *testing.T) {
	s := New(1000)
	s.Add("owner", "198.51.100.7")
	s.Add("mallory", "203.0.113.1")
	for i := range 100 {
		s.Add("mallory", fmt.Sprintf("10.0.%d.1", i))
		if i%3 == 0 {
			s.Add("mallory", "203.0.113.1")
		}
	}
	if !s.Has("owner", "198.51.100.7") {
		t.Error("the owner's address was forgotten by another account's churn")
	}
	if !s.Has("mallory", "203.0.113.1") {
		t.Error("an address logged in from again was forgotten")
	}
	n := 0
	for i := range 100 {
		if s.Has("mallory", fmt.Sprintf("10.0.%d.1", i)) {
			n++
		}
	}
	if n != MaxClients-1 {
		t.Errorf("mallory keeps %d of his hundred addresses; want %d, the newest", n, MaxClients-1)
	}
	if s.Len() != 2 {
		t.Errorf("Len = %d; want 2", s.Len())
	}
}

// TestBound: past its bound the set holds no more accounts.
func TestBound(t *testing.T) {
	s := New(shards * 10)
	for i := range shards * 100 {
		s.Add(fmt.Sprintf("host-%d", i), "192.0.2.1")
	}
	if s.Len() > shards*11 {
		t.Errorf("Len = %d; want at most %d", s.Len(), shards*11)
	}
	if !s.Has(fmt.Sprintf("host-%d", shards*100-1), "192.0.2.1") {
		t.Error("the account added last is not held")
	}
}

// TestBytesPerAccount measures the memory of a set of 200,000 accounts of
// one client each, the figure the package comment gives.
func TestBytesPerAccount(t *testing.T) {
	const n = 200000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := New(n)
	for i := range n {
		s.Add(fmt.Sprintf("host-%07d", i), "192.0.2.1")
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("%.1f bytes per account", per)
	if s.Len() != n {
		t.Fatalf("Len = %d; want %d", s.Len(), n)
	}
	if per > 64 {
		t.Errorf("%.1f bytes per account; the package comment says about 40", per)
	}
	runtime.KeepAlive(s)
}
