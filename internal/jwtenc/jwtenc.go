// Package jwtenc writes the JSON of nmauth's token claims by hand, the
// bytes encoding/json writes for them, and reads and writes the issue time
// they carry to the nanosecond. Minting is on the path of every login:
// encoding/json's reflection, and the MarshalJSON of jwt.ClaimStrings that
// calls it again, cost more than the rest of the token and grew each
// login's stack past its first size. It knows nothing of the claims'
// meaning; nmauth says which fields a token has.
package jwtenc

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Object appends a JSON object's members to a buffer, separating them
// with commas. The zero Object is not ready; [Open] makes one. Each
// method returns the Object with its member, as append does, so that a
// buffer on the caller's stack stays there.
type Object struct {
	b    []byte
	open int
}

// Open starts an object after the bytes already in b.
func Open(b []byte) Object {
	b = append(b, '{')
	return Object{b: b, open: len(b)}
}

// Close ends the object and returns the buffer with it.
func (o Object) Close() []byte { return append(o.b, '}') }

// field appends the name of the next member, and the colon after it.
func (o Object) field(name string) []byte {
	b := o.b
	if len(b) > o.open {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// String appends a member whose value is the string s.
func (o Object) String(name, s string) Object { o.b = AppendString(o.field(name), s); return o }

// Raw appends a member whose value is v, already encoded.
func (o Object) Raw(name string, v []byte) Object { o.b = append(o.field(name), v...); return o }

// Uint appends a member whose value is the integer n.
func (o Object) Uint(name string, n uint64) Object {
	o.b = strconv.AppendUint(o.field(name), n, 10)
	return o
}

// Time appends a member whose value is t as [AppendTime] writes it.
func (o Object) Time(name string, t time.Time) Object { o.b = AppendTime(o.field(name), t); return o }

// Date appends a member whose value is d as its MarshalJSON writes it,
// and nothing for a nil d.
func (o Object) Date(name string, d *jwt.NumericDate) (Object, error) {
	if d == nil {
		return o, nil
	}
	if jwt.TimePrecision >= time.Second {
		// What MarshalJSON writes then, without its allocations.
		o.b = strconv.AppendInt(o.field(name), d.Truncate(jwt.TimePrecision).Unix(), 10)
		return o, nil
	}
	v, err := d.MarshalJSON()
	if err != nil {
		return o, err
	}
	return o.Raw(name, v), nil
}

// AppendString appends s as a JSON string, as encoding/json writes
// it: printable ASCII but for the characters it escapes is copied, and
// anything else goes through encoding/json.
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// AppendTime appends t as a NumericDate with nanoseconds, written as a
// decimal fraction as RFC 7519 §2 allows: "1772366460.123456789".
func AppendTime(b []byte, t time.Time) []byte {
	b = strconv.AppendInt(b, t.Unix(), 10)
	ns := strconv.AppendUint(make([]byte, 0, 9), uint64(t.Nanosecond()), 10)
	b = append(b, "."...)
	b = append(b, "000000000"[len(ns):]...)
	return append(b, ns...)
}

// ParseTime reads a time that AppendTime writes, or a NumericDate in
// whole seconds or with fewer digits of fraction.
func ParseTime(b []byte) (time.Time, error) {
	sec, frac, _ := strings.Cut(string(b), ".")
	n, err := strconv.ParseUint(sec, 10, 63)
	if err != nil || len(frac) > 9 {
		return time.Time{}, errors.New("nmauth: malformed iat")
	}
	var ns uint64
	if frac != "" {
		if ns, err = strconv.ParseUint(frac+strings.Repeat("0", 9-len(frac)), 10, 64); err != nil {
			return time.Time{}, errors.New("nmauth: malformed iat")
		}
	}
	return time.Unix(int64(n), int64(ns)), nil
}
