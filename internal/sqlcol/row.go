package sqlcol

import (
	"bytes"
	"fmt"
	"strings"
	"time"
)

// Cell receives one column as the driver gives it, before any
// conversion, so that a value of the wrong type (text in a number or
// boolean column, a blob where text belongs, which SQLite's loose typing
// keeps if someone writes it by hand) breaks that column of that record
// alone rather than the scan of the row, and with it a whole listing.
type Cell struct{ V any }

// Scan implements sql.Scanner. A driver may reuse a []byte after the
// next row, so a blob is copied.
func (c *Cell) Scan(src any) error {
	if b, ok := src.([]byte); ok {
		src = bytes.Clone(b)
	}
	c.V = src
	return nil
}

// RowScanner is the Scan method shared by *sql.Row and *sql.Rows.
type RowScanner interface {
	Scan(dest ...any) error
}

// ScanCells scans a row into n cells.
func ScanCells(row RowScanner, n int) ([]Cell, error) {
	cells := make([]Cell, n)
	dest := make([]any, n)
	for i := range cells {
		dest[i] = &cells[i]
	}
	return cells, row.Scan(dest...)
}

// Decoder reads the cells of one row into a record's fields with the
// decoders of this package. A column that does not decode, whether of the
// wrong type or damaged JSON, leaves its field at the zero value and is
// noted in Broken, with its error in Errs, so that the caller returns the
// record marked broken.
type Decoder struct {
	// Key is the record's key, which the caller names broken columns by.
	Key string
	// Broken are the columns that did not decode, in the order read, and
	// Errs their errors.
	Broken []string
	Errs   []error
}

// check notes column as broken when its decoding failed with err.
func (d *Decoder) check(column string, err error) {
	if err != nil {
		d.Broken = append(d.Broken, column)
		d.Errs = append(d.Errs, err)
	}
}

// KeyText reads the record's key, which locates the row and so is read
// as text whatever its type; it becomes the Key.
func (d *Decoder) KeyText(c Cell) string {
	d.Key = Key(c.V)
	return d.Key
}

// Text reads a TEXT column.
func (d *Decoder) Text(column string, c Cell) string {
	s, err := Text(c.V)
	d.check(column, err)
	return s
}

// Integer reads a BIGINT column.
func (d *Decoder) Integer(column string, c Cell) int64 {
	n, err := Integer(c.V)
	d.check(column, err)
	return n
}

// Time reads a BIGINT column of a time as Nanos writes it.
func (d *Decoder) Time(column string, c Cell) time.Time {
	return Time(d.Integer(column, c))
}

// Count reads a BIGINT counter, which is never negative.
func (d *Decoder) Count(column string, c Cell) int {
	n, err := Count(c.V)
	d.check(column, err)
	return n
}

// Boolean reads a BOOLEAN column.
func (d *Decoder) Boolean(column string, c Cell) bool {
	b, err := Boolean(c.V)
	d.check(column, err)
	return b
}

// Blob reads a nullable BLOB (BYTEA) column, nil for NULL.
func (d *Decoder) Blob(column string, c Cell) []byte {
	b, err := Blob(c.V)
	d.check(column, err)
	return b
}

// DecodeList decodes the JSON list in cell c of column into v, nil for an
// empty list; null is broken, since the store writes "[]" for an empty
// list. A column that does not decode leaves v nil and is noted in d.
func DecodeList[T any](d *Decoder, column string, c Cell, v *[]T) {
	vs, err := List[T](c.V, false)
	d.check(column, err)
	*v = vs
}

// DecodeNullableList is DecodeList for a list the store writes as null
// when it is empty: the recovery codes, which it has always written so.
func DecodeNullableList[T any](d *Decoder, column string, c Cell, v *[]T) {
	vs, err := List[T](c.V, true)
	d.check(column, err)
	*v = vs
}

// RowError is the error of a record with several broken columns: Errs
// holds the error of each, in the order of Columns. errors.As and
// errors.Is look into each of them, the first column's first.
type RowError struct {
	Columns []string
	Errs    []error
}

// Error is the first column's error followed by the names of every
// broken column.
func (e *RowError) Error() string {
	return fmt.Sprintf("%v (broken columns: %s)", e.Errs[0], strings.Join(e.Columns, ", "))
}

// Unwrap returns the error of each broken column.
func (e *RowError) Unwrap() []error { return e.Errs }
