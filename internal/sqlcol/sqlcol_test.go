package sqlcol

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// TestDecoders reads each kind of column from every type a driver gives:
// the type the store writes reads as its value, any other is an error
// that leaves the value at its zero value.
func TestDecoders(t *testing.T) {
	tests := []struct {
		name   string
		read   func(v any) (any, error)
		cell   any
		want   any
		broken error // the error the value is broken by, nil if it is sound
	}{
		{"text", textOf, "abc", "abc", nil},
		{"text from a blob", textOf, []byte("abc"), "", ErrWrongType},
		{"text from an integer", textOf, int64(1), "", ErrWrongType},
		{"text from NULL", textOf, nil, "", ErrWrongType},
		{"integer", integerOf, int64(-7), int64(-7), nil},
		{"integer from text", integerOf, "12", int64(0), ErrWrongType},
		{"integer from a real", integerOf, 1.5, int64(0), ErrWrongType},
		{"count", countOf, int64(3), 3, nil},
		{"negative count", countOf, int64(-1000), 0, ErrNegative},
		{"count from text", countOf, "many", 0, ErrWrongType},
		{"boolean from PostgreSQL", boolOf, true, true, nil},
		{"boolean 1 from SQLite", boolOf, int64(1), true, nil},
		{"boolean 0 from SQLite", boolOf, int64(0), false, nil},
		{"boolean 2", boolOf, int64(2), false, ErrWrongType},
		{"boolean from text", boolOf, "abc", false, ErrWrongType},
		{"boolean from the text true", boolOf, "true", false, ErrWrongType},
		{"blob", blobOf, []byte{1, 2}, "\x01\x02", nil},
		{"blob from NULL", blobOf, nil, "", nil},
		{"blob from text", blobOf, "not a blob", "", ErrWrongType},
		{"list", listOf, `["a","b"]`, `[a b]`, nil},
		{"empty list", listOf, `[]`, `[]`, nil},
		{"list null", listOf, `null`, `[]`, ErrNullList},
		{"list null with spaces", listOf, ` null `, `[]`, ErrNullList},
		{"list of the wrong shape", listOf, `{"a":1}`, `[]`, errJSON},
		{"list of the wrong element type", listOf, `[1]`, `[]`, errJSON},
		{"list from a blob", listOf, []byte(`["a"]`), `[]`, ErrWrongType},
		{"nullable list null", nullableListOf, `null`, `[]`, nil},
		{"nullable list from text", nullableListOf, `{bad`, `[]`, errJSON},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.read(tc.cell)
			if got != tc.want {
				t.Errorf("read %#v as %#v, want %#v", tc.cell, got, tc.want)
			}
			switch {
			case tc.broken == nil && err != nil:
				t.Errorf("%#v broke the column: %v", tc.cell, err)
			case tc.broken == errJSON && (err == nil || errors.Is(err, ErrWrongType) || errors.Is(err, ErrNullList)):
				t.Errorf("%#v: error %v, want a JSON decoding error", tc.cell, err)
			case tc.broken != nil && tc.broken != errJSON && !errors.Is(err, tc.broken):
				t.Errorf("%#v: error %v, want %v", tc.cell, err, tc.broken)
			}
		})
	}
}

// errJSON marks a case broken by JSON that does not decode.
var errJSON = errors.New("JSON that does not decode")

// TestWrongTypeNamesType: the error of a value of the wrong type names
// its type and the one wanted, never the value.
func TestWrongTypeNamesType(t *testing.T) {
	_, err := Text([]byte("secret value"))
	if err == nil || err.Error() != "value of the wrong type: blob, want text" {
		t.Fatalf("error %v", err)
	}
	for v, want := range map[any]string{nil: "NULL", "x": "text", int64(1): "integer", 1.5: "real", true: "boolean", int32(1): "int32"} {
		if got := TypeName(v); got != want {
			t.Errorf("TypeName(%#v) = %q, want %q", v, got, want)
		}
	}
	if got := TypeName([]byte{1}); got != "blob" {
		t.Errorf("TypeName of a blob = %q", got)
	}
}

// TestKey reads a key as text whatever its type.
func TestKey(t *testing.T) {
	for v, want := range map[any]string{"bob": "bob", int64(12): "12", nil: "<nil>"} {
		if got := Key(v); got != want {
			t.Errorf("Key(%#v) = %q, want %q", v, got, want)
		}
	}
	if got := Key([]byte("h1")); got != "h1" {
		t.Errorf("Key of a blob = %q", got)
	}
}

// TestEncodeList writes an empty list as "[]", never null, and reads back
// what it wrote.
func TestEncodeList(t *testing.T) {
	for _, vs := range [][]string{nil, {}, {"a", "b"}} {
		s, err := EncodeList(vs, "list")
		if err != nil {
			t.Fatal(err)
		}
		if len(vs) == 0 && s != "[]" {
			t.Errorf("EncodeList(%#v) = %s, want []", vs, s)
		}
		back, err := List[string](s, false)
		if err != nil || strings.Join(back, " ") != strings.Join(vs, " ") {
			t.Errorf("List(%s) = %v, %v; want %v", s, back, err, vs)
		}
	}
}

// TestNanos keeps a time as Unix nanoseconds, 0 for the zero time, and
// refuses one that would not read back equal.
func TestNanos(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	if n, ok := Nanos(at); !ok || !Time(n).Equal(at) || Time(n).Location() != time.UTC {
		t.Errorf("Nanos(%v) = %d, %v; reads back as %v", at, n, ok, Time(n))
	}
	if n, ok := Nanos(time.Time{}); !ok || n != 0 || !Time(0).IsZero() {
		t.Errorf("the zero time is %d, %v", n, ok)
	}
	for _, bad := range []time.Time{time.Unix(0, 0), time.Unix(0, math.MaxInt64).Add(time.Second), time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if _, ok := Nanos(bad); ok {
			t.Errorf("Nanos(%v) accepted", bad)
		}
	}
}

func textOf(v any) (any, error)    { return Text(v) }
func integerOf(v any) (any, error) { return Integer(v) }
func countOf(v any) (any, error)   { return Count(v) }
func boolOf(v any) (any, error)    { return Boolean(v) }

func blobOf(v any) (any, error) {
	b, err := Blob(v)
	return string(b), err
}

func listOf(v any) (any, error) {
	vs, err := List[string](v, false)
	return fmtList(vs), err
}

func nullableListOf(v any) (any, error) {
	vs, err := List[string](v, true)
	return fmtList(vs), err
}

func fmtList(v []string) string { return "[" + strings.Join(v, " ") + "]" }
