package jwtenc

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestObjectIsEncodingJSON: an object written member by member is the
// JSON encoding/json writes for a struct of the same members, after
// whatever the buffer held.
func TestObjectIsEncodingJSON(t *testing.T) {
	exp := jwt.NewNumericDate(time.Date(2031, 2, 3, 4, 5, 6, 0, time.UTC))
	want, err := json.Marshal(struct {
		Sub  string           `json:"sub"`
		Aud  json.RawMessage  `json:"aud"`
		Exp  *jwt.NumericDate `json:"exp"`
		Gen  uint64           `json:"gen"`
		TOTP bool             `json:"totp"`
	}{`a"<\>` + "\x01é", json.RawMessage(`["x"]`), exp, 42, true})
	if err != nil {
		t.Fatal(err)
	}
	o := Open([]byte("x.")).String("sub", `a"<\>`+"\x01é").Raw("aud", []byte(`["x"]`))
	if o, err = o.Date("exp", exp); err != nil {
		t.Fatal(err)
	}
	if o, err = o.Date("nbf", nil); err != nil {
		t.Fatal(err)
	}
	o = o.Uint("gen", 42).Raw("totp", []byte("true"))
	if got := o.Close(); !bytes.Equal(got, append([]byte("x."), want...)) {
		t.Fatalf("wrote %s, encoding/json writes %s", got, want)
	}
	if got := Open(nil).Close(); string(got) != "{}" {
		t.Fatalf("empty object %s", got)
	}
}

// TestTimeKeepsNanoseconds: an issue time comes back to the nanosecond,
// and a NumericDate with fewer digits, or none, reads as the same time.
func TestTimeKeepsNanoseconds(t *testing.T) {
	for _, tm := range []time.Time{time.Unix(1772366460, 123456789), time.Unix(1772366460, 0), time.Unix(0, 1)} {
		b := AppendTime(nil, tm)
		if len(b) < 10 || b[len(b)-10] != '.' {
			t.Errorf("%v written %s, not with nine digits of fraction", tm, b)
		}
		got, err := ParseTime(b)
		if err != nil || !got.Equal(tm) {
			t.Errorf("%s parses as %v, %v; want %v", b, got, err, tm)
		}
	}
	for s, want := range map[string]time.Time{"1772366460": time.Unix(1772366460, 0), "1772366460.5": time.Unix(1772366460, 5e8)} {
		if got, err := ParseTime([]byte(s)); err != nil || !got.Equal(want) {
			t.Errorf("%s parses as %v, %v; want %v", s, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "1.1234567890", "1.-5", "1e9", "null", `"1"`} {
		if _, err := ParseTime([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("alice")
	f.Add("a\"<\\>&\u2028\xff\x00")
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString([]byte("x"), s); !bytes.Equal(got, append([]byte("x"), want...)) {
			t.Fatalf("AppendString = %s, encoding/json writes %s", got, want)
		}
	})
}
