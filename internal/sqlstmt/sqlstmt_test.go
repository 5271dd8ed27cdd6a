package sqlstmt

import "testing"

func TestNumbered(t *testing.T) {
	for q, want := range map[string]string{
		"SELECT 1":                              "SELECT 1",
		"SELECT a FROM t WHERE b = ?":           "SELECT a FROM t WHERE b = $1",
		"UPDATE t SET é = ?, b = ? WHERE c = ?": "UPDATE t SET é = $1, b = $2 WHERE c = $3",
	} {
		if got := Numbered(q); got != want {
			t.Errorf("Numbered(%q) = %q, want %q", q, got, want)
		}
	}
}

func TestStatements(t *testing.T) {
	cols := []string{"id", "a", "b"}
	for _, tc := range []struct{ got, want string }{
		{Insert("t", cols), "INSERT INTO t (id, a, b) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING"},
		{Update("t", cols), "UPDATE t SET a = ?, b = ? WHERE id = ?"},
		{Page("t", "id, a", "id", true), `SELECT id, a FROM t WHERE id COLLATE "C" > ? ORDER BY id COLLATE "C" LIMIT ?`},
		{Page("t", "id, a", "id", false), `SELECT id, a FROM t WHERE id > ? ORDER BY id LIMIT ?`},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestQuoteIdent(t *testing.T) {
	for name, want := range map[string]string{
		"nmauth":  "nmauth",
		"_a1":     "_a1",
		"App":     `"App"`,
		"my-role": `"my-role"`,
		`a"b`:     `"a""b"`,
		"1st":     `"1st"`,
		"":        `""`,
	} {
		if got := QuoteIdent(name); got != want {
			t.Errorf("QuoteIdent(%q) = %s, want %s", name, got, want)
		}
	}
}

func TestFirstSchema(t *testing.T) {
	for path, want := range map[string]string{
		`"$user", public`: "public",
		`$user, app`:      "app",
		` "My Schema" `:   "My Schema",
		`$user`:           "public",
		``:                "public",
	} {
		if got := FirstSchema(path); got != want {
			t.Errorf("FirstSchema(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestSQLiteURI(t *testing.T) {
	for path, want := range map[string]string{
		"auth.db":          "file:auth.db",
		"/var/lib/auth.db": "file:///var/lib/auth.db",
		"//host/share.db":  "file:////host/share.db",
		"a?b#c%d.db":       "file:a%3fb%23c%25d.db",
	} {
		if got := SQLiteURI(path); got != want {
			t.Errorf("SQLiteURI(%q) = %q, want %q", path, got, want)
		}
	}
}
