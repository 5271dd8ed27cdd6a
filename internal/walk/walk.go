// Package walk visits every record of a paged listing, a page at a time.
package walk

import "context"

// All lists pages of size records through list, each page starting after
// the key of the last record of the one before, and calls each on every
// record in order. It stops at the first error of list or each, or after
// a page shorter than size.
func All[T any](ctx context.Context, size int, list func(ctx context.Context, after string, limit int) ([]T, error),
	key func(T) string, each func(T) error) error {
	after := ""
	for {
		page, err := list(ctx, after, size)
		if err != nil {
			return err
		}
		for _, v := range page {
			if err := each(v); err != nil {
				return err
			}
		}
		if len(page) < size {
			return nil
		}
		after = key(page[len(page)-1])
	}
}
