// This file holds how the SQLStore's records are kept in their columns:
// the encoding of times and lists, and the errors of a row whose cells do
// not decode, in which a column of the wrong type breaks that column of
// that record alone. The decoding of a row's cells is internal/sqlcol's;
// this file names the record and the column a broken value belongs to.

package nmauth

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nmauth/nmauth/internal/sqlcol"
)

var errSQLTimeRange = errors.New("nmauth: sql store: time out of range")

// brokenErr is nil for a row of a record of kind that d read soundly, the
// *BrokenRecordError of its one broken column, or a *brokenRowError of
// its several.
func brokenErr(kind string, d *sqlcol.Decoder) error {
	if len(d.Errs) == 0 {
		return nil
	}
	all := make([]*BrokenRecordError, len(d.Errs))
	for i, err := range d.Errs {
		all[i] = &BrokenRecordError{Kind: kind, Key: d.Key, Column: d.Broken[i], Err: err}
	}
	if len(all) == 1 {
		return all[0]
	}
	return &brokenRowError{all: all}
}

// brokenRowError is the error of a record with several broken columns.
// errors.As finds the first column's *BrokenRecordError in it, and
// errors.Is finds [ErrBrokenRecord].
type brokenRowError struct{ all []*BrokenRecordError }

// Error names the record and its broken columns.
func (e *brokenRowError) Error() string {
	cols := make([]string, len(e.all))
	for i, b := range e.all {
		cols[i] = b.Column
	}
	return fmt.Sprintf("%v (broken columns: %s)", e.all[0], strings.Join(cols, ", "))
}

// Unwrap returns the error of each broken column.
func (e *brokenRowError) Unwrap() []error {
	errs := make([]error, len(e.all))
	for i, b := range e.all {
		errs[i] = b
	}
	return errs
}

// encodeList writes a list column as JSON, "[]" for none.
func encodeList[T any](vs []T, what string) (string, error) {
	b, err := sqlcol.EncodeList(vs)
	if err != nil {
		return "", wrapSQL("encode "+what, err)
	}
	return b, nil
}

// encodeTimes converts each time to Unix nanoseconds, 0 for the zero time.
// A time that would not read back equal is refused rather than stored
// wrong (see sqlcol.Nanos).
func encodeTimes(ts ...time.Time) ([]int64, error) {
	out := make([]int64, len(ts))
	for i, t := range ts {
		n, ok := sqlcol.Nanos(t)
		if !ok {
			return nil, fmt.Errorf("%w: %s", errSQLTimeRange, t.UTC().Format(time.RFC3339Nano))
		}
		out[i] = n
	}
	return out, nil
}
