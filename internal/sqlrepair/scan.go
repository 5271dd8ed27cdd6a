package sqlrepair

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nmauth/nmauth/internal/sqldb"
)

var (
	// errPosition is the error of a scan from a position it did not
	// return.
	errPosition = errors.New("not a position of a scan for broken records")
	// errLimit is the error of a scan of no records at a time.
	errLimit = errors.New("a scan for broken records needs a positive limit")
)

// Kind is a kind of record that a scan for broken records reads, and the
// read of one page of its table after a key, as [sqldb.Table.BrokenPage]
// reads it.
type Kind struct {
	Name string
	Page func(ctx context.Context, after string, limit int) (n int, last string, broken []error, err error)
}

// Scan reads one batch of a scan for broken records over kinds, in their
// order: one page, of at most limit records, of one kind. after is the
// batch's position, "" for the start, else one that Scan returned: the
// kind and the last key read, as "kind:key", where "kind:" starts a
// kind. It returns the errors of the broken records and the position of
// the next batch, "" once every kind has been read.
func Scan(ctx context.Context, kinds []Kind, after string, limit int) ([]error, string, error) {
	name, key, _ := strings.Cut(after, ":")
	if after == "" {
		name = kinds[0].Name
	}
	if limit <= 0 {
		return nil, "", sqldb.Wrap("broken records", errLimit)
	}
	i := slices.IndexFunc(kinds, func(k Kind) bool { return k.Name == name })
	if i < 0 {
		return nil, "", sqldb.Wrap("broken records", fmt.Errorf("%w: %q", errPosition, after))
	}
	n, last, broken, err := kinds[i].Page(ctx, key, limit)
	switch {
	case err != nil:
		return nil, "", sqldb.Wrap("broken records", err)
	case n == limit:
		return broken, name + ":" + last, nil
	case i+1 < len(kinds):
		// This kind is done: the next batch starts the next one.
		return broken, kinds[i+1].Name + ":", nil
	}
	return broken, "", nil
}
