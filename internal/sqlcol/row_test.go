package sqlcol

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// TestDecoder reads each kind of column through a row's decoder: a value
// of the type the store writes reads as its value and breaks nothing, any
// other breaks that column alone, noted with its error, with its field
// left at the zero value. What each type of value decodes to is
// TestDecoders.
func TestDecoder(t *testing.T) {
	tests := []struct {
		name   string
		read   func(d *Decoder, c Cell) any
		cell   any
		want   any
		broken error // the decoding error, nil if the column is sound
	}{
		{"text", decText, "abc", "abc", nil},
		{"text from a blob", decText, []byte("abc"), "", ErrWrongType},
		{"integer", decInteger, int64(-7), int64(-7), nil},
		{"integer from text", decInteger, "12", int64(0), ErrWrongType},
		{"time", decTime, int64(1e9), time.Unix(1, 0).UTC(), nil},
		{"time from text", decTime, "1", time.Time{}, ErrWrongType},
		{"count", decCount, int64(3), 3, nil},
		{"negative count", decCount, int64(-1000), 0, ErrNegative},
		{"boolean 1 from SQLite", decBool, int64(1), true, nil},
		{"boolean from text", decBool, "abc", false, ErrWrongType},
		{"blob", decBlob, []byte{1, 2}, "\x01\x02", nil},
		{"blob from text", decBlob, "not a blob", "", ErrWrongType},
		{"list", decList, `["a","b"]`, `[a b]`, nil},
		{"list null", decList, `null`, `[]`, ErrNullList},
		{"nullable list null", decNullableList, `null`, `[]`, nil},
		{"nullable list from a blob", decNullableList, []byte(`["a"]`), `[]`, ErrWrongType},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Decoder{Key: "bob"}
			got := tc.read(&d, Cell{V: tc.cell})
			if got != tc.want {
				t.Errorf("read %#v as %#v, want %#v", tc.cell, got, tc.want)
			}
			if tc.broken == nil {
				if d.Broken != nil || d.Errs != nil {
					t.Errorf("%#v broke the column: %v", tc.cell, d.Errs)
				}
				return
			}
			if !slices.Equal(d.Broken, []string{"c"}) || len(d.Errs) != 1 || !errors.Is(d.Errs[0], tc.broken) || d.Key != "bob" {
				t.Errorf("%#v: broken %v, errors %v; want column c broken by %v", tc.cell, d.Broken, d.Errs, tc.broken)
			}
		})
	}
}

// TestDecoderKey: the key read from the row is the Key, whatever its
// type.
func TestDecoderKey(t *testing.T) {
	var d Decoder
	if k := d.KeyText(Cell{V: []byte("h1")}); k != "h1" || d.Key != "h1" {
		t.Fatalf("key %q, Key %q", k, d.Key)
	}
}

// TestDecoderSeveral: a row with several broken columns notes each, in
// the order read, with its own error.
func TestDecoderSeveral(t *testing.T) {
	d := Decoder{Key: "h"}
	d.Boolean("disabled", Cell{V: "abc"})
	d.Text("mac_address", Cell{V: "00:11:22:33:44:55"})
	d.Count("password_failures", Cell{V: int64(-1)})
	if !slices.Equal(d.Broken, []string{"disabled", "password_failures"}) || len(d.Errs) != 2 ||
		!errors.Is(d.Errs[0], ErrWrongType) || !errors.Is(d.Errs[1], ErrNegative) {
		t.Fatalf("broken %v, errors %v; want disabled and password_failures", d.Broken, d.Errs)
	}
}

// TestCellCopiesBlob: a cell keeps its blob when the driver reuses the
// bytes for the next row.
func TestCellCopiesBlob(t *testing.T) {
	b := []byte("abc")
	var c Cell
	if err := c.Scan(b); err != nil {
		t.Fatal(err)
	}
	b[0] = 'x'
	if got := string(c.V.([]byte)); got != "abc" {
		t.Fatalf("cell %q after the driver's bytes changed, want abc", got)
	}
}

func decText(d *Decoder, c Cell) any    { return d.Text("c", c) }
func decInteger(d *Decoder, c Cell) any { return d.Integer("c", c) }
func decTime(d *Decoder, c Cell) any    { return d.Time("c", c) }
func decCount(d *Decoder, c Cell) any   { return d.Count("c", c) }
func decBool(d *Decoder, c Cell) any    { return d.Boolean("c", c) }
func decBlob(d *Decoder, c Cell) any    { return string(d.Blob("c", c)) }

func decList(d *Decoder, c Cell) any {
	var v []string
	DecodeList(d, "c", c, &v)
	return fmtList(v)
}

func decNullableList(d *Decoder, c Cell) any {
	var v []string
	DecodeNullableList(d, "c", c, &v)
	return fmtList(v)
}
