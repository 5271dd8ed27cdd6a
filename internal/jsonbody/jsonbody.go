// Package jsonbody reads the JSON body of a request as nmauth's routes
// take it: application/json, at most a given size, exactly one JSON value
// and nothing after it, and keys that match the fields of the struct
// decoded exactly (see [CheckKeys]). [Flat] parses, without
// encoding/json, the body of string fields that a fleet's logins send.
//
// The package knows nothing of the Authenticator, its routes or its wire
// profiles: each error it returns is one of its sentinels or a
// [*FieldError], and its caller maps them to a status and an envelope.
package jsonbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
)

// The errors of a body that cannot be read or decoded; a [*FieldError]
// names a field.
var (
	// ErrContentType is a body that is not application/json.
	ErrContentType = errors.New("nmauth: content type must be application/json")
	// ErrTooLarge is a body over the limit [Read] was given.
	ErrTooLarge = errors.New("nmauth: request body too large")
	// ErrMalformed is a body that is not one JSON value of the type
	// decoded, or has anything after it.
	ErrMalformed = errors.New("nmauth: malformed JSON body")
	// ErrDuplicateKey is a JSON body with one field given twice.
	ErrDuplicateKey = errors.New("nmauth: duplicate key in JSON body")
)

// Read reads the application/json body of r, of at most limit bytes: a
// larger one is [ErrTooLarge], and w is told to close the connection.
func Read(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return nil, ErrContentType
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		return nil, decodeError(err)
	}
	return body, nil
}

// Decode decodes body, exactly one JSON value, into v, a pointer to a
// struct whose JSON field names the body's keys must match as
// [CheckKeys] says.
func Decode(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if err := dec.Decode(&struct{}{}); err != io.EOF {
		return decodeError(err)
	}
	return CheckKeys(body, Fields(v))
}

func decodeError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return ErrTooLarge
	}
	return ErrMalformed
}
