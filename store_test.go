package nmauth_test

import (
	"reflect"
	"slices"
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

// TestRecordsHoldWhatAnApplicationNeeds: the records an application sees
// carry its fields and one State field; the counters nmauth keeps for
// itself are in that State, not beside the account's own fields.
func TestRecordsHoldWhatAnApplicationNeeds(t *testing.T) {
	fields := func(v any) []string {
		var names []string
		for i := range reflect.TypeOf(v).NumField() {
			names = append(names, reflect.TypeOf(v).Field(i).Name)
		}
		return names
	}
	for _, c := range []struct {
		record any
		want   []string
	}{
		// Broken is the Store's word on a record it could read only in
		// part, in a listing.
		{nmauth.User{}, []string{"Name", "PasswordHash", "Disabled", "TOTPSecret", "RecoveryCodes", "CreatedAt", "Broken", "State"}},
		{nmauth.Host{}, []string{"ID", "MACAddress", "PasswordHash", "Disabled", "CreatedAt", "Broken", "State"}},
	} {
		if got := fields(c.record); !slices.Equal(got, c.want) {
			t.Errorf("%T has fields %v, want %v", c.record, got, c.want)
		}
	}
}
