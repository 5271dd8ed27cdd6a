package integration

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
	"github.com/nmauth/nmauth/internal/state"
)

// BenchmarkFailedLoginTiming times failed logins over a SQLite file in
// turns: a wrong password of a user who exists, then one of a name nobody
// holds (the order swapped every other round), and reports the median of
// each. Run it with -benchtime=500x for 500 + 500. The user's counters are
// reset between rounds, outside the timing, so no backoff answers first.
func BenchmarkFailedLoginTiming(b *testing.B) {
	ctx := context.Background()
	db := openSQLite(b, filepath.Join(b.TempDir(), "nmauth.db"))
	store, err := nmauth.NewSQLStore(ctx, db, nmauth.DialectSQLite)
	if err != nil {
		b.Fatal(err)
	}
	a, err := nmauth.New(nmauth.Config{Store: store, Secrets: [][]byte{[]byte("failed-login-timing-0123456789abcdef")}, ClientRate: -1})
	if err != nil {
		b.Fatal(err)
	}
	if err := a.Admin().CreateUser(ctx, "alice", "correct horse battery"); err != nil {
		b.Fatal(err)
	}
	login := func(name string) time.Duration {
		start := time.Now()
		_, err := a.LoginUser(ctx, name, "a wrong password")
		d := time.Since(start)
		if !errors.Is(err, nmauth.ErrInvalidCredentials) {
			b.Fatalf("login of %s: %v", name, err)
		}
		return d
	}
	var known, unknown []time.Duration
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			known = append(known, login("alice"))
			unknown = append(unknown, login(fmt.Sprintf("nobody-%d", i)))
		} else {
			unknown = append(unknown, login(fmt.Sprintf("nobody-%d", i)))
			known = append(known, login("alice"))
		}
		b.StopTimer()
		if err := store.UpdateUser(ctx, "alice", func(u *nmauth.User) error {
			state.Edit(&u.State, func(s *state.User) { s.Account = state.Account{Generation: s.Generation} })
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(median(known), "known-ms")
	b.ReportMetric(median(unknown), "unknown-ms")
}

func median(ds []time.Duration) float64 {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return float64(ds[len(ds)/2]) / float64(time.Millisecond)
}
