// This file holds how the SQLStore's records are kept in their columns:
// the encoding of times and lists, and the decoding of a row's cells, in
// which a column of the wrong type breaks that column of that record alone.

package nmauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

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

// errWrongType is the decoding error of a column whose value is not of
// the type the store writes there; the message names the type, never the
// value.
var errWrongType = errors.New("value of the wrong type")

// errNullList is the decoding error of a JSON list column that holds
// null where the store writes "[]" for an empty list (every list but the
// recovery codes, which it has always written as null when there are
// none): null was written by someone else, and reading it as empty could
// widen what the record allows (an access token's networks) or forget
// what it refuses (the tokens a logout revoked).
var errNullList = errors.New("null where a list belongs")

// errNegative is the decoding error of a counter below zero, which the
// store never writes and which would hand out extra attempts.
var errNegative = errors.New("negative count")

// columnDecoder reads the cells of one row into a record's fields. A
// column that does not decode, whether of the wrong type or damaged JSON,
// leaves its field at the zero value and is noted, so that the record is
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

// wrongType notes column as holding a value of type v's instead of want.
func (d *columnDecoder) wrongType(column string, v any, want string) {
	d.note(column, fmt.Errorf("%w: %s, want %s", errWrongType, sqlTypeName(v), want))
}

// sqlTypeName names the type of a driver value as the database would.
func sqlTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "NULL"
	case string:
		return "text"
	case []byte:
		return "blob"
	case int64:
		return "integer"
	case float64:
		return "real"
	case bool:
		return "boolean"
	}
	return fmt.Sprintf("%T", v)
}

// keyText reads the record's key, which locates the row and so is read
// as text whatever its type; it becomes the key that broken columns name.
func (d *columnDecoder) keyText(c sqlCell) string {
	switch v := c.v.(type) {
	case string:
		d.key = v
	case []byte:
		d.key = string(v)
	default:
		d.key = fmt.Sprint(v)
	}
	return d.key
}

// text reads a TEXT column.
func (d *columnDecoder) text(column string, c sqlCell) string {
	s, ok := c.v.(string)
	if !ok {
		d.wrongType(column, c.v, "text")
	}
	return s
}

// integer reads a BIGINT column.
func (d *columnDecoder) integer(column string, c sqlCell) int64 {
	n, ok := c.v.(int64)
	if !ok {
		d.wrongType(column, c.v, "integer")
	}
	return n
}

// count reads a BIGINT counter, which is never negative.
func (d *columnDecoder) count(column string, c sqlCell) int {
	n, ok := c.v.(int64)
	switch {
	case !ok:
		d.wrongType(column, c.v, "integer")
	case n < 0:
		d.note(column, errNegative)
		n = 0
	}
	return int(n)
}

// boolean reads a BOOLEAN column: a bool from PostgreSQL, 0 or 1 from
// SQLite, which stores booleans as integers.
func (d *columnDecoder) boolean(column string, c sqlCell) bool {
	switch v := c.v.(type) {
	case bool:
		return v
	case int64:
		if v == 0 || v == 1 {
			return v == 1
		}
	}
	d.wrongType(column, c.v, "boolean")
	return false
}

// blob reads a nullable BLOB (BYTEA) column, nil for NULL.
func (d *columnDecoder) blob(column string, c sqlCell) []byte {
	switch v := c.v.(type) {
	case nil:
		return nil
	case []byte:
		return v
	}
	d.wrongType(column, c.v, "blob")
	return nil
}

// decodeColumn decodes the JSON list in cell c of column into v, nil for
// an empty list; null is broken. A column that does not decode leaves v
// nil and is noted in d.
func decodeColumn[T any](d *columnDecoder, column string, c sqlCell, v *[]T) {
	decodeListCell(d, column, c, v, false)
}

// decodeNullableColumn is decodeColumn for a list the store writes as
// null when it is empty.
func decodeNullableColumn[T any](d *columnDecoder, column string, c sqlCell, v *[]T) {
	decodeListCell(d, column, c, v, true)
}

func decodeListCell[T any](d *columnDecoder, column string, c sqlCell, v *[]T, nullOK bool) {
	*v = nil
	s, ok := c.v.(string)
	if !ok {
		d.wrongType(column, c.v, "text")
		return
	}
	vs, err := decodeStoredList[T](s, nullOK)
	if err != nil {
		d.note(column, err)
		return
	}
	*v = vs
}

// decodeStoredList reads a list column as the store writes it: a JSON
// array, nil when empty, or null when nullOK.
func decodeStoredList[T any](s string, nullOK bool) ([]T, error) {
	var vs []T
	if err := json.Unmarshal([]byte(s), &vs); err != nil {
		return nil, err
	}
	if vs == nil && !nullOK {
		return nil, errNullList
	}
	if len(vs) == 0 {
		return nil, nil
	}
	return vs, nil
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
	if vs == nil {
		vs = []T{}
	}
	b, err := json.Marshal(vs)
	if err != nil {
		return "", wrapSQL("encode "+what, err)
	}
	return string(b), nil
}

// rowScanner is the Scan method shared by *sql.Row and *sql.Rows.
type rowScanner interface {
	Scan(dest ...any) error
}

// encodeTimes converts each time to Unix nanoseconds, 0 for the zero time.
// A time that would not read back equal is refused rather than stored
// wrong: one outside the int64 range, and the epoch, which reads back as
// the zero time.
func encodeTimes(ts ...time.Time) ([]int64, error) {
	out := make([]int64, len(ts))
	for i, t := range ts {
		if t.IsZero() {
			continue
		}
		n := t.UnixNano()
		if n == 0 || !time.Unix(0, n).Equal(t) {
			return nil, fmt.Errorf("%w: %s", errSQLTimeRange, t.UTC().Format(time.RFC3339Nano))
		}
		out[i] = n
	}
	return out, nil
}

func decodeTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
