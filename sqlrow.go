// This file holds the errors of a SQLStore's row whose cells do not
// decode, in which a column of the wrong type breaks that column of that
// record alone. The decoding of a row's cells is internal/sqlcol's; this
// file names the record and the column a broken value belongs to.

package nmauth

import (
	"fmt"
	"strings"

	"github.com/nmauth/nmauth/internal/sqlcol"
)

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
