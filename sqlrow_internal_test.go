package nmauth

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/nmauth/nmauth/internal/sqlcol"
)

// TestColumnDecoder reads each kind of column through the record's
// decoder: a value of the type the store writes reads as its value and
// breaks nothing, any other breaks that column alone, named as a
// *BrokenRecordError of its record, with its field left at the zero value.
// What each type of value decodes to is internal/sqlcol's TestDecoders.
func TestColumnDecoder(t *testing.T) {
	tests := []struct {
		name   string
		read   func(d *columnDecoder, c sqlCell) any
		cell   any
		want   any
		broken error // the decoding error, nil if the column is sound
	}{
		{"text", textOf, "abc", "abc", nil},
		{"text from a blob", textOf, []byte("abc"), "", sqlcol.ErrWrongType},
		{"integer", integerOf, int64(-7), int64(-7), nil},
		{"integer from text", integerOf, "12", int64(0), sqlcol.ErrWrongType},
		{"count", countOf, int64(3), 3, nil},
		{"negative count", countOf, int64(-1000), 0, sqlcol.ErrNegative},
		{"boolean 1 from SQLite", boolOf, int64(1), true, nil},
		{"boolean from text", boolOf, "abc", false, sqlcol.ErrWrongType},
		{"blob", blobOf, []byte{1, 2}, "\x01\x02", nil},
		{"blob from text", blobOf, "not a blob", "", sqlcol.ErrWrongType},
		{"list", listOf, `["a","b"]`, `[a b]`, nil},
		{"list null", listOf, `null`, `[]`, sqlcol.ErrNullList},
		{"nullable list null", nullableListOf, `null`, `[]`, nil},
		{"nullable list from a blob", nullableListOf, []byte(`["a"]`), `[]`, sqlcol.ErrWrongType},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := columnDecoder{kind: "user", key: "bob"}
			got := tc.read(&d, sqlCell{v: tc.cell})
			if got != tc.want {
				t.Errorf("read %#v as %#v, want %#v", tc.cell, got, tc.want)
			}
			if tc.broken == nil {
				if d.broken != nil || d.err() != nil {
					t.Errorf("%#v broke the column: %v", tc.cell, d.err())
				}
				return
			}
			var b *BrokenRecordError
			if !slices.Equal(d.broken, []string{"c"}) || !errors.As(d.err(), &b) || b.Kind != "user" || b.Key != "bob" || b.Column != "c" ||
				!errors.Is(d.err(), ErrBrokenRecord) || !errors.Is(d.err(), tc.broken) {
				t.Errorf("%#v: broken %v, error %v; want column c of user bob broken by %v", tc.cell, d.broken, d.err(), tc.broken)
			}
		})
	}
}

// TestColumnDecoderKey: the key read from the row is the key that its
// broken columns name.
func TestColumnDecoderKey(t *testing.T) {
	d := columnDecoder{kind: "host"}
	if k := d.keyText(sqlCell{v: []byte("h1")}); k != "h1" {
		t.Fatalf("key %q", k)
	}
	d.text("mac_address", sqlCell{v: int64(1)})
	var b *BrokenRecordError
	if !errors.As(d.err(), &b) || b.Kind != "host" || b.Key != "h1" || b.Column != "mac_address" {
		t.Fatalf("error %v; want column mac_address of host h1", d.err())
	}
}

// TestColumnDecoderSeveral: a row with several broken columns names each,
// and its error matches ErrBrokenRecord and the first column's
// *BrokenRecordError.
func TestColumnDecoderSeveral(t *testing.T) {
	d := columnDecoder{kind: "host", key: "h"}
	d.boolean("disabled", sqlCell{v: "abc"})
	d.text("mac_address", sqlCell{v: "00:11:22:33:44:55"})
	d.count("password_failures", sqlCell{v: int64(-1)})
	err := d.err()
	var b *BrokenRecordError
	if !slices.Equal(d.broken, []string{"disabled", "password_failures"}) || !errors.Is(err, ErrBrokenRecord) || !errors.As(err, &b) || b.Column != "disabled" {
		t.Fatalf("broken %v, error %v; want disabled and password_failures", d.broken, err)
	}
}

func textOf(d *columnDecoder, c sqlCell) any    { return d.text("c", c) }
func integerOf(d *columnDecoder, c sqlCell) any { return d.integer("c", c) }
func countOf(d *columnDecoder, c sqlCell) any   { return d.count("c", c) }
func boolOf(d *columnDecoder, c sqlCell) any    { return d.boolean("c", c) }
func blobOf(d *columnDecoder, c sqlCell) any    { return string(d.blob("c", c)) }

func listOf(d *columnDecoder, c sqlCell) any {
	var v []string
	decodeColumn(d, "c", c, &v)
	return fmtList(v)
}

func nullableListOf(d *columnDecoder, c sqlCell) any {
	var v []string
	decodeNullableColumn(d, "c", c, &v)
	return fmtList(v)
}

func fmtList(v []string) string { return "[" + strings.Join(v, " ") + "]" }
