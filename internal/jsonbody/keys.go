package jsonbody

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// FieldError is a body refused for one of its fields: a client's
// mistake, which its caller answers 400 with [FieldError.Message].
type FieldError struct {
	Key string // the key as the body gave it, or the field's name
	// Field is the struct's field that Key was taken for.
	Field   string
	Problem Problem
}

// Problem is what is wrong with a field.
type Problem int

const (
	// Case is a key that is a field's name in another case.
	Case Problem = iota
	// Misspelled is a key no field is named that looks like one of
	// the fields misspelled.
	Misspelled
	// Missing is a required field that is absent or empty.
	Missing
)

func (e *FieldError) Error() string { return "nmauth: " + e.Message() }

// Message is the text a client sees. A key is shown only when it is short
// and printable, quoted as JSON would quote it.
func (e *FieldError) Message() string {
	key := "a key"
	if len(e.Key) <= 64 && utf8.ValidString(e.Key) && !strings.ContainsFunc(e.Key, func(r rune) bool { return !unicode.IsPrint(r) }) {
		key = fmt.Sprintf("%q", e.Key)
	}
	switch e.Problem {
	case Case:
		return fmt.Sprintf("%s in the JSON body must be written %q: field names match exactly, case included", key, e.Field)
	case Misspelled:
		return fmt.Sprintf("unknown field %s in the JSON body; did you mean %q?", key, e.Field)
	}
	return fmt.Sprintf("%q is missing or empty in the JSON body; it is required", e.Field)
}

// Require refuses a body that leaves out or empties one of the named
// fields: given as name, value pairs, the first empty value is named. A login without a password or an id is a malformed request, a
// 400, and never a wrong credential (401, on which netclient deletes its
// configuration); it counts as no attempt.
func Require(nameValue ...string) error {
	for i := 0; i+1 < len(nameValue); i += 2 {
		if nameValue[i+1] == "" {
			return &FieldError{Field: nameValue[i], Problem: Missing}
		}
	}
	return nil
}

// CheckKeys refuses a top-level object in body whose keys do not match
// fields, the JSON names of the struct decoded, as encoding/json/v2 does
// by default: a key given twice (encoding/json keeps the last silently,
// so a proxy or log that reads the first would see another request than
// the one served), a field's name in another case (which encoding/json
// would take for the field), or a key that looks like a field misspelled
// (see [misspelledField]), which would otherwise leave the field empty and
// answer as a wrong credential. Other keys are ignored: real clients send
// more fields. body is known to be valid JSON.
func CheckKeys(body []byte, fields []string) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return ErrMalformed
		}
		key, _ := tok.(string)
		if seen[key] {
			return ErrDuplicateKey
		}
		seen[key] = true
		if err := checkKey(key, fields); err != nil {
			return err
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return ErrMalformed
		}
	}
	return nil
}

// checkKey refuses a key that is one of fields in another case or one
// misspelled.
func checkKey(key string, fields []string) error {
	if slices.Contains(fields, key) {
		return nil
	}
	for _, f := range fields {
		if foldKey(key) == foldKey(f) {
			return &FieldError{Key: key, Field: f, Problem: Case}
		}
	}
	if f := misspelledField(key, fields); f != "" {
		return &FieldError{Key: key, Field: f, Problem: Misspelled}
	}
	return nil
}

// foldKey folds a key the way encoding/json matches a key to a field name
// regardless of case, so that "ſ" (U+017F) and "K" (U+212A) fold as "S" and
// "K" do.
func foldKey(s string) string {
	return strings.Map(func(r rune) rune { return unicode.ToUpper(unicode.ToLower(r)) }, s)
}

// misspelledField returns the field that key, a key no field is named,
// looks like a misspelling of, or "". Both are compared folded and
// without '_', '-', '.' and spaces; key is taken for field f when it is f
// (user_name, macAddress), a prefix of f of 3 characters or more (pass,
// user), or within min(2, len(f)/4) edits of f (usename, pasword,
// passwrod; an edit inserts, deletes or replaces a character or swaps two
// neighbours), so that a short field such as id takes no near key. Of
// several, the nearest wins. The keys Netmaker's clients send to nmauth's
// routes (netclient, nmctl, the web UI, Netmaker's own User record) are
// all either fields or far from every one.
func misspelledField(key string, fields []string) string {
	k := squashKey(key)
	if k == "" || len(k) > 64 {
		return ""
	}
	best, bestDist := "", -1
	for _, f := range fields {
		sf := squashKey(f)
		d := editDistance(k, sf)
		near := k == sf || len(k) >= 3 && strings.HasPrefix(sf, k) || d <= min(2, len(sf)/4)
		if near && (bestDist < 0 || d < bestDist) {
			best, bestDist = f, d
		}
	}
	return best
}

// squashKey folds s and drops the separators people put between words.
func squashKey(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '_', '-', '.', ' ':
			return -1
		}
		return unicode.ToLower(unicode.ToUpper(r))
	}, s)
}

// editDistance is the optimal string alignment distance between a and b,
// in runes: insertions, deletions, replacements and swaps of neighbours.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}

// Fields returns the JSON names of the fields of the struct v points
// to.
func Fields(v any) []string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var fields []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields = append(fields, name)
	}
	return fields
}
