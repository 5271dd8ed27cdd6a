// Package sqlcol reads and writes the values of a SQL store's columns: the
// value a database/sql driver gives for one column, taken before any
// conversion, decodes to the Go type the store writes there, and times and
// lists encode to the integers and JSON text the store keeps.
//
// A value of the wrong type (text in a number or boolean column, a blob
// where text belongs, which SQLite's loose typing keeps if someone writes
// it by hand) is an error of that column alone: each decoder returns the
// zero value and a plain error that names the type, never the value, and
// the caller says which record and column it was. A row is scanned into
// Cells and read through a Decoder, which notes each column that does not
// decode, so that the caller marks that record alone broken.
package sqlcol

import (
	"encoding/json"
	"errors"
	"fmt"
)

var (
	// ErrWrongType is the error of a column whose value is not of the
	// type the store writes there.
	ErrWrongType = errors.New("value of the wrong type")
	// ErrNullList is the error of a JSON list column that holds null
	// where the store writes "[]" for an empty list: null was written by
	// someone else, and reading it as empty could widen what a record
	// allows or forget what it refuses.
	ErrNullList = errors.New("null where a list belongs")
	// ErrNegative is the error of a counter below zero, which the store
	// never writes and which would hand out extra attempts.
	ErrNegative = errors.New("negative count")
)

// wrongType is the error of a value v where a value of type want belongs.
func wrongType(v any, want string) error {
	return fmt.Errorf("%w: %s, want %s", ErrWrongType, TypeName(v), want)
}

// TypeName names the type of a driver value as the database would.
func TypeName(v any) string {
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

// Key reads a record's key, which locates the row and so is read as text
// whatever its type.
func Key(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return fmt.Sprint(v)
}

// Text reads a TEXT column.
func Text(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", wrongType(v, "text")
	}
	return s, nil
}

// Integer reads a BIGINT column.
func Integer(v any) (int64, error) {
	n, ok := v.(int64)
	if !ok {
		return 0, wrongType(v, "integer")
	}
	return n, nil
}

// Count reads a BIGINT counter, which is never negative.
func Count(v any) (int, error) {
	n, ok := v.(int64)
	switch {
	case !ok:
		return 0, wrongType(v, "integer")
	case n < 0:
		return 0, ErrNegative
	}
	return int(n), nil
}

// Boolean reads a BOOLEAN column: a bool from PostgreSQL, 0 or 1 from
// SQLite, which stores booleans as integers.
func Boolean(v any) (bool, error) {
	switch v := v.(type) {
	case bool:
		return v, nil
	case int64:
		if v == 0 || v == 1 {
			return v == 1, nil
		}
	}
	return false, wrongType(v, "boolean")
}

// Blob reads a nullable BLOB (BYTEA) column, nil for NULL.
func Blob(v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case []byte:
		return v, nil
	}
	return nil, wrongType(v, "blob")
}

// List reads a JSON list column as the store writes it: a JSON array in
// text, nil when empty, or null when nullOK (a list the store writes as
// null when it is empty).
func List[T any](v any, nullOK bool) ([]T, error) {
	s, ok := v.(string)
	if !ok {
		return nil, wrongType(v, "text")
	}
	var vs []T
	if err := json.Unmarshal([]byte(s), &vs); err != nil {
		return nil, err
	}
	if vs == nil && !nullOK {
		return nil, ErrNullList
	}
	if len(vs) == 0 {
		return nil, nil
	}
	return vs, nil
}

// EncodeList writes a list column as JSON, "[]" for none; what names the
// list in the error of one that does not encode.
func EncodeList[T any](vs []T, what string) (string, error) {
	if vs == nil {
		vs = []T{}
	}
	b, err := json.Marshal(vs)
	if err != nil {
		return "", fmt.Errorf("nmauth: sql store: encode %s: %w", what, err)
	}
	return string(b), nil
}
