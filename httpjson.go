// This file owns JSON in and out: reading and decoding a request body,
// the quick parse of a host login body, and writing a JSON answer with
// its headers.

package nmauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"unicode/utf8"
)

// maxBodyBytes is the largest request body the handler reads.
const maxBodyBytes = 64 << 10

// Request decoding errors, mapped to 415, 413 and 400.
var (
	errContentType = errors.New("nmauth: content type must be application/json")
	errBodyTooBig  = errors.New("nmauth: request body too large")
	errBadJSON     = errors.New("nmauth: malformed JSON body")
	// errDuplicateKey is a JSON body with one field given twice.
	errDuplicateKey = errors.New("nmauth: duplicate key in JSON body")
)

// decodeJSON reads exactly one JSON value of at most maxBodyBytes from an
// application/json body into v, a pointer to a struct, whose keys must
// match v's field names exactly (see [checkKeys]).
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := readJSONBody(w, r)
	if err != nil {
		return err
	}
	return decodeJSONBody(body, v)
}

// readJSONBody reads an application/json body of at most maxBodyBytes.
func readJSONBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return nil, errContentType
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		return nil, decodeError(err)
	}
	return body, nil
}

// decodeJSONBody decodes body as decodeJSON does.
func decodeJSONBody(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if err := dec.Decode(&struct{}{}); err != io.EOF {
		return decodeError(err)
	}
	return checkKeys(body, jsonFields(v))
}

// parseFlat fills req from body when body is one JSON object of string
// values, each key one of req's fields at most once, each string without
// an escape or a control character and in valid UTF-8, with nothing but
// JSON whitespace around its tokens: the body every netclient sends. Such
// a body decodeJSONBody takes too, with the same fields, so parseFlat only
// saves its work. For any other body it reports false and leaves req as it
// was, for decodeJSONBody to judge.
func (req *hostAuthRequest) parseFlat(body []byte) bool {
	var out hostAuthRequest
	var seen [3]bool
	i := skipJSONSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return false
	}
	i = skipJSONSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		i++
	} else {
		for {
			key, j, ok := plainJSONString(body, i)
			if !ok {
				return false
			}
			if j = skipJSONSpace(body, j); j >= len(body) || body[j] != ':' {
				return false
			}
			val, j, ok := plainJSONString(body, skipJSONSpace(body, j+1))
			if !ok {
				return false
			}
			var f int
			var dst *string
			switch string(key) {
			case "id":
				f, dst = 0, &out.ID
			case "macaddress":
				f, dst = 1, &out.MACAddress
			case "password":
				f, dst = 2, &out.Password
			default:
				return false
			}
			if seen[f] {
				return false
			}
			seen[f], *dst = true, string(val)
			if j = skipJSONSpace(body, j); j >= len(body) {
				return false
			}
			if body[j] == '}' {
				i = j + 1
				break
			}
			if body[j] != ',' {
				return false
			}
			i = skipJSONSpace(body, j+1)
		}
	}
	if skipJSONSpace(body, i) != len(body) {
		return false
	}
	*req = out
	return true
}

// skipJSONSpace returns the index of the first byte at or after i in b
// that is not JSON whitespace.
func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainJSONString reads the JSON string at b[i]: its contents and the
// index after it, when it has no escape and no control character and is
// valid UTF-8, the strings whose contents are their bytes.
func plainJSONString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s := b[i+1 : j]
			return s, j + 1, utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, j, false
		}
	}
	return nil, len(b), false
}

func decodeError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return errBodyTooBig
	}
	return errBadJSON
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	setJSONHeader(w, status)
	json.NewEncoder(w).Encode(v)
}

// writeJSONBytes writes b, encoded JSON, as writeJSON writes a value.
func writeJSONBytes(w http.ResponseWriter, status int, b []byte) {
	setJSONHeader(w, status)
	w.Write(b)
}

// setJSONHeader writes status with the headers of a JSON answer. Their
// keys are canonical, so they are set in the map directly, both values
// from one allocation (each slice at its full capacity, so that adding a
// value to one copies it).
func setJSONHeader(w http.ResponseWriter, status int) {
	v := []string{"application/json", "no-store"}
	h := w.Header()
	h["Content-Type"], h["Cache-Control"] = v[:1:1], v[1:2:2]
	w.WriteHeader(status)
}
