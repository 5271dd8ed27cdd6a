// Package sqlstmt writes the statements of a SQL store once for the two
// databases it serves, SQLite and PostgreSQL: statements are written with
// ? placeholders and numbered for PostgreSQL, the insert, update and page
// of a table are made from its column list, and names and paths are
// quoted for the place they are pasted into.
package sqlstmt

import (
	"regexp"
	"strconv"
	"strings"
)

// Numbered writes the ? placeholders of query as PostgreSQL's $1, $2, ….
// It counts every '?', so it suits statements written with parameters
// only, with no '?' in a literal or an identifier.
func Numbered(query string) string {
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	for _, r := range query {
		if r != '?' {
			b.WriteRune(r)
			continue
		}
		n++
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}

// Insert inserts every column of cols, the first of which is the key,
// and does nothing when the key is taken, so that the count of rows it
// affected says whether the row was inserted.
func Insert(table string, cols []string) string {
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ")
	return "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES (" + marks +
		") ON CONFLICT (" + cols[0] + ") DO NOTHING"
}

// Update sets every column of cols but the first, the key, whose value
// comes last.
func Update(table string, cols []string) string {
	sets := make([]string, len(cols)-1)
	for i, c := range cols[1:] {
		sets[i] = c + " = ?"
	}
	return "UPDATE " + table + " SET " + strings.Join(sets, ", ") + " WHERE " + cols[0] + " = ?"
}

// Page selects cols from the page of table after a key, in the byte
// order of column key, whose arguments are the key after and the limit.
// SQLite compares TEXT byte by byte by default; PostgreSQL (postgres)
// compares by the database's collation unless told "C", which is byte
// order for UTF-8 and is the collation of the index that a store makes
// for this query.
func Page(table, cols, key string, postgres bool) string {
	if postgres {
		key += ` COLLATE "C"`
	}
	return "SELECT " + cols + " FROM " + table + " WHERE " + key + " > ? ORDER BY " + key + " LIMIT ?"
}

var plainIdent = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// QuoteIdent writes a PostgreSQL identifier so that it can be pasted into
// a statement: as it is when it needs no quotes, else in double quotes.
func QuoteIdent(name string) string {
	if plainIdent.MatchString(name) {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// FirstSchema is the schema a PostgreSQL search_path names first that is
// not the role's own name ($user), "public" when there is none.
func FirstSchema(searchPath string) string {
	for _, name := range strings.Split(searchPath, ",") {
		if name = strings.Trim(strings.TrimSpace(name), `"`); name != "" && name != "$user" {
			return name
		}
	}
	return "public"
}

// SQLiteURI writes a file path as the path of a SQLite "file:" URI, in
// which '?' and '#' end the path and '%' starts an escape; an absolute
// path gets an empty authority so that one starting with "//" is not
// read as a host name.
func SQLiteURI(path string) string {
	p := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	if strings.HasPrefix(p, "/") {
		p = "//" + p
	}
	return "file:" + p
}
