package nmauth

import (
	"errors"
	"testing"

	"github.com/nmauth/nmauth/internal/sqlcol"
)

// TestBrokenErr: the broken column of a row is a *BrokenRecordError of
// its record, named by the kind, the key the decoder read and the column,
// and matching ErrBrokenRecord and the decoding error. How each column
// decodes is internal/sqlcol's TestDecoder.
func TestBrokenErr(t *testing.T) {
	var d sqlcol.Decoder
	d.KeyText(sqlcol.Cell{V: []byte("h1")})
	d.Text("password_hash", sqlcol.Cell{V: "x"})
	if err := brokenErr("host", &d); err != nil {
		t.Fatalf("sound row: %v", err)
	}
	d.Text("mac_address", sqlcol.Cell{V: int64(1)})
	err := brokenErr("host", &d)
	var b *BrokenRecordError
	if !errors.As(err, &b) || b.Kind != "host" || b.Key != "h1" || b.Column != "mac_address" ||
		!errors.Is(err, ErrBrokenRecord) || !errors.Is(err, sqlcol.ErrWrongType) {
		t.Fatalf("error %v; want column mac_address of host h1", err)
	}
}

// TestBrokenErrSeveral: a row with several broken columns names each,
// and its error matches ErrBrokenRecord and the first column's
// *BrokenRecordError.
func TestBrokenErrSeveral(t *testing.T) {
	d := sqlcol.Decoder{Key: "h"}
	d.Boolean("disabled", sqlcol.Cell{V: "abc"})
	d.Text("mac_address", sqlcol.Cell{V: "00:11:22:33:44:55"})
	d.Count("password_failures", sqlcol.Cell{V: int64(-1)})
	err := brokenErr("host", &d)
	var b *BrokenRecordError
	if !errors.Is(err, ErrBrokenRecord) || !errors.As(err, &b) || b.Kind != "host" || b.Key != "h" || b.Column != "disabled" {
		t.Fatalf("error %v; want disabled of host h first", err)
	}
	cols := brokenColumns(err)
	if len(cols) != 2 || cols[0].Column != "disabled" || cols[1].Column != "password_failures" ||
		!errors.Is(cols[1], sqlcol.ErrNegative) || err.Error() != cols[0].Error()+" (broken columns: disabled, password_failures)" {
		t.Fatalf("columns %v, error %q; want disabled and password_failures", cols, err)
	}
}
