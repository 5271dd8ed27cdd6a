package nmauth_test

import (
	"testing"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/storetest"
)

func TestMemoryStoreConformance(t *testing.T) {
	tests := []struct {
		name     string
		newStore func(t *testing.T) nmauth.Store
	}{
		{"NewMemoryStore", func(*testing.T) nmauth.Store { return nmauth.NewMemoryStore() }},
		{"zero value", func(*testing.T) nmauth.Store { return new(nmauth.MemoryStore) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { storetest.Run(t, tc.newStore) })
	}
}
