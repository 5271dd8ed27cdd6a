package jsonbody

import "unicode/utf8"

// Flat parses body when it is one JSON object of string values, each key
// one of keys at most once, each string without an escape or a control
// character and in valid UTF-8, with nothing but JSON whitespace around
// its tokens: the body every netclient sends at host login. It sets
// vals[i] to the value of keys[i] (vals is as long as keys, and keys at
// most 64), "" for a key the body leaves out. Such a body [Decode] takes
// too, into a struct of string fields of those JSON names, with the same
// values, so Flat only saves its work. For any other body it reports
// false, vals then holding nothing of use, for Decode to judge.
func Flat(body []byte, keys, vals []string) bool {
	var seen uint64
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' || len(keys) > 64 || len(vals) != len(keys) {
		return false
	}
	clear(vals)
	i = skipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		i++
	} else {
		for {
			key, j, ok := plainString(body, i)
			if !ok {
				return false
			}
			if j = skipSpace(body, j); j >= len(body) || body[j] != ':' {
				return false
			}
			val, j, ok := plainString(body, skipSpace(body, j+1))
			if !ok {
				return false
			}
			f := -1
			for k, name := range keys {
				if string(key) == name {
					f = k
					break
				}
			}
			if f < 0 || seen&(1<<f) != 0 {
				return false
			}
			seen |= 1 << f
			vals[f] = string(val)
			if j = skipSpace(body, j); j >= len(body) {
				return false
			}
			if body[j] == '}' {
				i = j + 1
				break
			}
			if body[j] != ',' {
				return false
			}
			i = skipSpace(body, j+1)
		}
	}
	return skipSpace(body, i) == len(body)
}

// skipSpace returns the index of the first byte at or after i in b that
// is not JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString reads the JSON string at b[i]: its contents and the index
// after it, when it has no escape and no control character and is valid
// UTF-8, the strings whose contents are their bytes.
func plainString(b []byte, i int) ([]byte, int, bool) {
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
