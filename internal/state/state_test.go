package state

import (
	"testing"
	"time"
)

func TestLockedUntil(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	later := func(d time.Duration) time.Time { return now.Add(d) }
	for _, c := range []struct {
		name   string
		a      Account
		others []time.Time
		want   time.Time
	}{
		{"none", Account{}, nil, time.Time{}},
		{"account-wide", Account{PasswordBlockedUntil: later(time.Minute)}, nil, later(time.Minute)},
		{"a client's", Account{PasswordClients: []Client{{Client: "a", BlockedUntil: later(time.Second)}, {Client: "b", BlockedUntil: later(time.Hour)}}}, nil, later(time.Hour)},
		{"another's", Account{PasswordBlockedUntil: later(time.Minute)}, []time.Time{later(2 * time.Minute)}, later(2 * time.Minute)},
		{"all past", Account{PasswordBlockedUntil: later(-time.Minute), PasswordClients: []Client{{BlockedUntil: now}}}, []time.Time{later(-time.Second)}, time.Time{}},
	} {
		if got := c.a.LockedUntil(now, c.others...); !got.Equal(c.want) {
			t.Errorf("%s: LockedUntil = %v, want %v", c.name, got, c.want)
		}
	}
}
