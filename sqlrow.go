// This file holds how the SQLStore's records are kept in their columns:
// the encoding of times and lists, and the decoding of a row's cells, in
// which a column of the wrong type breaks that column of that record alone.
// The decoders and encoders of one value are internal/sqlcol's; this file
// names the record and the column a broken value belongs to.

package nmauth

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nmauth/nmauth/internal/sqlcol"
	"github.com/nmauth/nmauth/internal/state"
)

var errSQLTimeRange = errors.New("nmauth: sql store: time out of range")

// sqlCell receives one column as the driver gives it, before any
// conversion, so that a value of the wrong type (text in a number or
// boolean column, a blob where text belongs, which SQLite's loose typing
// keeps if someone writes it by hand) breaks that column of that record
// alone rather than the scan of the row, and with it a whole listing.
type sqlCell struct{ v any }

// Scan implements sql.Scanner. A driver may reuse a []byte after the
// next row, so a blob is copied.
func (c *sqlCell) Scan(src any) error {
	if b, ok := src.([]byte); ok {
		src = bytes.Clone(b)
	}
	c.v = src
	return nil
}

// scanCells scans a row into n cells.
func scanCells(row rowScanner, n int) ([]sqlCell, error) {
	cells := make([]sqlCell, n)
	dest := make([]any, n)
	for i := range cells {
		dest[i] = &cells[i]
	}
	return cells, row.Scan(dest...)
}

// columnDecoder reads the cells of one row into a record's fields with
// the decoders of internal/sqlcol. A column that does not decode, whether
// of the wrong type or damaged JSON, leaves its field at the zero value and
// is noted as a *BrokenRecordError of the record, so that the record is
// returned marked broken.
type columnDecoder struct {
	kind, key string
	broken    []string
	errs      []*BrokenRecordError
}

// note records column as broken by err.
func (d *columnDecoder) note(column string, err error) {
	d.broken = append(d.broken, column)
	d.errs = append(d.errs, &BrokenRecordError{Kind: d.kind, Key: d.key, Column: column, Err: err})
}

// check notes column as broken when its decoding failed with err.
func (d *columnDecoder) check(column string, err error) {
	if err != nil {
		d.note(column, err)
	}
}

// keyText reads the record's key, which locates the row and so is read
// as text whatever its type; it becomes the key that broken columns name.
func (d *columnDecoder) keyText(c sqlCell) string {
	d.key = sqlcol.Key(c.v)
	return d.key
}

// text reads a TEXT column.
func (d *columnDecoder) text(column string, c sqlCell) string {
	s, err := sqlcol.Text(c.v)
	d.check(column, err)
	return s
}

// integer reads a BIGINT column.
func (d *columnDecoder) integer(column string, c sqlCell) int64 {
	n, err := sqlcol.Integer(c.v)
	d.check(column, err)
	return n
}

// count reads a BIGINT counter, which is never negative.
func (d *columnDecoder) count(column string, c sqlCell) int {
	n, err := sqlcol.Count(c.v)
	d.check(column, err)
	return n
}

// boolean reads a BOOLEAN column.
func (d *columnDecoder) boolean(column string, c sqlCell) bool {
	b, err := sqlcol.Boolean(c.v)
	d.check(column, err)
	return b
}

// blob reads a nullable BLOB (BYTEA) column, nil for NULL.
func (d *columnDecoder) blob(column string, c sqlCell) []byte {
	b, err := sqlcol.Blob(c.v)
	d.check(column, err)
	return b
}

// decodeColumn decodes the JSON list in cell c of column into v, nil for
// an empty list; null is broken, since the store writes "[]" for an empty
// list. A column that does not decode leaves v nil and is noted in d.
func decodeColumn[T any](d *columnDecoder, column string, c sqlCell, v *[]T) {
	vs, err := sqlcol.List[T](c.v, false)
	d.check(column, err)
	*v = vs
}

// decodeNullableColumn is decodeColumn for a list the store writes as
// null when it is empty: the recovery codes, which it has always written
// so.
func decodeNullableColumn[T any](d *columnDecoder, column string, c sqlCell, v *[]T) {
	vs, err := sqlcol.List[T](c.v, true)
	d.check(column, err)
	*v = vs
}

// err is nil for a sound row, the *BrokenRecordError of its one broken
// column, or a *brokenRowError of its several.
func (d *columnDecoder) err() error {
	switch len(d.errs) {
	case 0:
		return nil
	case 1:
		return d.errs[0]
	}
	return &brokenRowError{all: d.errs}
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

// encodeClients writes the per-client failures as JSON, "[]" for none.
func encodeClients(cs []state.Client) (string, error) {
	return encodeList(cs, "client failures")
}

// encodeList writes a list column as JSON, "[]" for none.
func encodeList[T any](vs []T, what string) (string, error) {
	b, err := sqlcol.EncodeList(vs)
	if err != nil {
		return "", wrapSQL("encode "+what, err)
	}
	return b, nil
}

// rowScanner is the Scan method shared by *sql.Row and *sql.Rows.
type rowScanner interface {
	Scan(dest ...any) error
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

// decodeTime reads back a time that encodeTimes wrote.
func decodeTime(n int64) time.Time { return sqlcol.Time(n) }
