package sqlcol

import (
	"encoding/json"
	"fmt"
	"time"
)

// Encoder writes a record's values for its columns with the encoders of
// this package and keeps the first error in Err, so that the caller
// checks once, after the last column, as a Decoder's caller does.
type Encoder struct{ Err error }

func (e *Encoder) note(err error) {
	if e.Err == nil {
		e.Err = err
	}
}

// Times converts each time as EncodeTimes does; on an error each is 0.
func (e *Encoder) Times(ts ...time.Time) []int64 {
	ns, err := EncodeTimes(ts...)
	if err != nil {
		e.note(err)
		return make([]int64, len(ts))
	}
	return ns
}

// EncodeListTo writes a list column as EncodeList does and notes its
// error in e.
func EncodeListTo[T any](e *Encoder, vs []T, what string) string {
	s, err := EncodeList(vs, what)
	e.note(err)
	return s
}

// EncodeNullableListTo writes a list that DecodeNullableList reads, null
// when it is nil, and notes its error in e.
func EncodeNullableListTo[T any](e *Encoder, vs []T, what string) string {
	b, err := json.Marshal(vs)
	if err != nil {
		e.note(fmt.Errorf("nmauth: sql store: encode %s: %w", what, err))
	}
	return string(b)
}
