package knownset

import (
	"context"
	"time"
)

// Fill reads a listing of accounts in the order of their names, a batch
// at a time, and calls add for each, until it has read them all or ctx
// ends. list returns up to n accounts after the one named after ("" for
// the first); name names an account. A read that fails is tried again a
// second later, the wait doubling, up to tries reads in a row; then Fill
// gives up and returns the last read's error.
func Fill[T any](ctx context.Context, batch, tries int, list func(ctx context.Context, after string, n int) ([]T, error), name func(T) string, add func(T)) error {
	after, wait := "", time.Second
	for try := 1; ; try++ {
		accounts, err := list(ctx, after, batch)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			if try == tries {
				return err
			}
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return nil
			}
			wait *= 2
			continue
		}
		try, wait = 0, time.Second
		for _, a := range accounts {
			add(a)
		}
		if len(accounts) < batch {
			return nil
		}
		after = name(accounts[len(accounts)-1])
	}
}
