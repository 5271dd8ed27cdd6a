package nmauth

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestColumnDecoder reads each kind of column from every type a driver
// gives: the type the store writes reads as its value, any other breaks
// that column alone, named, with its field left at the zero value.
func TestColumnDecoder(t *testing.T) {
	tests := []struct {
		name   string
		read   func(d *columnDecoder, c sqlCell) any
		cell   any
		want   any
		broken bool
	}{
		{"text", textOf, "abc", "abc", false},
		{"text from a blob", textOf, []byte("abc"), "", true},
		{"text from an integer", textOf, int64(1), "", true},
		{"text from NULL", textOf, nil, "", true},
		{"integer", integerOf, int64(-7), int64(-7), false},
		{"integer from text", integerOf, "12", int64(0), true},
		{"integer from a real", integerOf, 1.5, int64(0), true},
		{"count", countOf, int64(3), 3, false},
		{"negative count", countOf, int64(-1000), 0, true},
		{"count from text", countOf, "many", 0, true},
		{"boolean from PostgreSQL", boolOf, true, true, false},
		{"boolean 1 from SQLite", boolOf, int64(1), true, false},
		{"boolean 0 from SQLite", boolOf, int64(0), false, false},
		{"boolean 2", boolOf, int64(2), false, true},
		{"boolean from text", boolOf, "abc", false, true},
		{"boolean from the text true", boolOf, "true", false, true},
		{"blob", blobOf, []byte{1, 2}, "\x01\x02", false},
		{"blob from NULL", blobOf, nil, "", false},
		{"blob from text", blobOf, "not a blob", "", true},
		{"list", listOf, `["a","b"]`, `[a b]`, false},
		{"empty list", listOf, `[]`, `[]`, false},
		{"list null", listOf, `null`, `[]`, true},
		{"list null with spaces", listOf, ` null `, `[]`, true},
		{"list of the wrong shape", listOf, `{"a":1}`, `[]`, true},
		{"list of the wrong element type", listOf, `[1]`, `[]`, true},
		{"list from a blob", listOf, []byte(`["a"]`), `[]`, true},
		{"nullable list null", nullableListOf, `null`, `[]`, false},
		{"nullable list from text", nullableListOf, `{bad`, `[]`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := columnDecoder{kind: "user", key: "bob"}
			got := tc.read(&d, sqlCell{v: tc.cell})
			if got != tc.want {
				t.Errorf("read %#v as %#v, want %#v", tc.cell, got, tc.want)
			}
			if !tc.broken {
				if d.broken != nil || d.err() != nil {
					t.Errorf("%#v broke the column: %v", tc.cell, d.err())
				}
				return
			}
			var b *BrokenRecordError
			if !slices.Equal(d.broken, []string{"c"}) || !errors.As(d.err(), &b) || b.Key != "bob" || b.Column != "c" || !errors.Is(d.err(), ErrBrokenRecord) {
				t.Errorf("%#v: broken %v, error %v; want column c of user bob broken", tc.cell, d.broken, d.err())
			}
		})
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
