package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepeatedKey: a key given twice in an import line is found, in any
// case encoding/json would match, and only at the top of the object.
func TestRepeatedKey(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`{"name": "a", "password": "p"}`, ""},
		{`{"name": "a", "name": "b"}`, `"name"`},
		{`{"name": "a", "password": "p", "Name": "b"}`, `"Name"`},
		{`{"password_hash": "x", "PASSWORD_HASH": "y"}`, `"PASSWORD_HASH"`},
		{`{"diſabled": true, "disabled": false}`, `"disabled"`},
		{`{"id": "h", "networks": [{"a": 1, "a": 2}]}`, ""},
		{`{"id": "h", "networks": ["n"], "networks": []}`, `"networks"`},
		{`["name", "name"]`, ""},
		{`{"name": `, ""},
		{`{"` + strings.Repeat("k", 100) + `": 1, "` + strings.Repeat("k", 100) + `": 2}`, `"` + strings.Repeat("k", 64) + `"…`},
	} {
		if got := repeatedKey([]byte(tc.line)); got != tc.want {
			t.Errorf("repeatedKey(%s) = %s, want %s", tc.line, got, tc.want)
		}
	}
}

// FuzzRepeatedKey: repeatedKey never panics, and a key it names is one
// that the object holds twice as encoding/json matches keys.
func FuzzRepeatedKey(f *testing.F) {
	for _, s := range []string{`{"name":"a","Name":"b"}`, `{"a":{"b":1},"A":[1]}`, `{"x":1}`, `{`, `[]`, `{"k":1,"k":2`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		key := repeatedKey([]byte(line))
		if key == "" || strings.HasSuffix(key, "…") {
			return
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(line), &obj) != nil {
			return // the object ended badly after the repeat
		}
		var name string
		if err := json.Unmarshal([]byte(key), &name); err != nil {
			t.Fatalf("named key %s is not quoted JSON-like text: %v", key, err)
		}
		n := 0
		for k := range obj {
			if strings.EqualFold(k, name) || strings.ToLower(strings.ToUpper(k)) == strings.ToLower(strings.ToUpper(name)) {
				n++
			}
		}
		// The exact repeat collapses in the map; a repeat in another
		// case stays as two entries.
		if n == 0 {
			t.Fatalf("repeatedKey named %s, which %q does not hold", key, line)
		}
	})
}

// TestImportLinesRefused: a line that gives a key twice is refused,
// naming the key and the line, and nothing of it is imported; a dry run
// ends saying what a run would do, not what it did.
func TestImportLinesRefused(t *testing.T) {
	dir := t.TempDir()
	env := baseEnv("MASTER_KEY=" + testMasterKey)
	db := filepath.Join(dir, "nmauth.db")
	users := `{"name": "alice", "password": "alice's password", "name": "mallory"}` + "\n" +
		`{"name": "bob", "password": "bob's password", "Password": "another password"}` + "\n" +
		`{"name": "carol", "password": "carol's password"}` + "\n"
	hosts := `{"id": "web-1", "password": "web-1's password", "networks": ["net-1"], "networks": ["net-2"]}` + "\n"
	r := runNmauthd(t, dir, env, users, "user", "import", "--db", db, "--dry-run")
	for _, want := range []string{"users: 1 to add, 0 already there, 2 skipped",
		`skipped user on line 1: the key "name" is given more than once`, `skipped user on line 2: the key "Password" is given more than once`} {
		if r.code != exitFail || !strings.Contains(r.stdout, want) {
			t.Errorf("dry run: exit %d, printed %q, want %q", r.code, r.stdout, want)
		}
	}
	if !strings.Contains(r.stderr, "2 records would be skipped") || !strings.Contains(r.stderr, "nothing was written") ||
		strings.Contains(r.stderr, "the others are imported") {
		t.Errorf("the dry run ends with %q", r.stderr)
	}
	r = runNmauthd(t, dir, env, users, "user", "import", "--db", db)
	if r.code != exitFail || !strings.Contains(r.stdout, "users: 1 added, 0 already there, 2 skipped") ||
		!strings.Contains(r.stderr, "2 records skipped, each named above; the others are imported") {
		t.Errorf("user import: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runNmauthd(t, dir, env, hosts, "host", "import", "--db", db)
	if r.code != exitFail || !strings.Contains(r.stdout, `skipped host on line 1: the key "networks" is given more than once`) {
		t.Errorf("host import: exit %d, stdout %q", r.code, r.stdout)
	}
	list := mustRun(t, dir, env, "", "user", "list", "--db", db)
	if strings.Contains(list, "alice") || strings.Contains(list, "mallory") || strings.Contains(list, "bob") || !strings.Contains(list, "carol") {
		t.Errorf("user list: %q", list)
	}
	if list := mustRun(t, dir, env, "", "host", "list", "--db", db); strings.Contains(list, "web-1") {
		t.Errorf("host list: %q", list)
	}
}
