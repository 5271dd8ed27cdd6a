package nmauth_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// markdownFiles lists every *.md file of the repository, by its path from
// the root.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("found only %v", files)
	}
	return files
}

var (
	// mdLink is an inline link or image: [text](target).
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// namedFile is a word that names a file: a Markdown file, or a path
	// under one of the repository's top-level directories.
	namedFile = regexp.MustCompile(`[A-Za-z0-9_.\-/]+`)
)

// headingAnchor is the anchor GitHub gives a heading.
func headingAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of the headings of a Markdown file, outside
// its code blocks.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range proseLines(string(text)) {
		if h := strings.TrimLeft(line, "#"); h != line && strings.HasPrefix(h, " ") {
			out[headingAnchor(strings.TrimSpace(h))] = true
		}
	}
	return out
}

// proseLines returns the lines of a Markdown text outside its fenced code
// blocks.
func proseLines(text string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, line)
		}
	}
	return out
}

// TestDocsLinksResolve checks every relative link of every Markdown file
// of the repository: its file exists, and its anchor, if any, is a heading
// of that file. It also checks that every file the text names (a Markdown
// file, or a path under a top-level directory of the repository) exists.
func TestDocsLinksResolve(t *testing.T) {
	top := map[string]bool{}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			top[e.Name()] = true
		}
	}
	for _, file := range markdownFiles(t) {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Dir(file)
		for _, m := range mdLink.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			resolved := file
			if path != "" {
				resolved = filepath.Join(dir, path)
				if _, err := os.Stat(resolved); err != nil {
					t.Errorf("%s links %s, which does not exist", file, target)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(resolved, ".md") && !anchors(t, resolved)[anchor] {
				t.Errorf("%s links %s, but %s has no heading with that anchor", file, target, resolved)
			}
		}
		for _, line := range proseLines(string(text)) {
			for _, word := range namedFile.FindAllString(line, -1) {
				word = strings.TrimRight(word, ".")
				first, _, nested := strings.Cut(word, "/")
				if !strings.HasSuffix(word, ".md") && !(nested && top[first]) {
					continue
				}
				if strings.Contains(word, "://") {
					continue
				}
				_, errHere := os.Stat(filepath.Join(dir, word))
				_, errRoot := os.Stat(word)
				if errHere != nil && errRoot != nil {
					t.Errorf("%s names %s, which the repository lacks", file, word)
				}
			}
		}
	}
}

// testedFiles are the files a command block of the docs may be taken
// from, each run by the test or script named.
var testedFiles = map[string]string{
	"cmd/nmauthd/testdata/quickstart.sh":         "TestQuickstart, which starts the server as its header says and runs it",
	"cmd/nmauthd/quickstart_test.go":             "TestQuickstart, which runs its quickstartCommand",
	"cmd/nmauthd/testdata/nginx.conf":            "TestBehindNginx",
	"cmd/nmauthd/testdata/move-from-netmaker.sh": "TestMoveFromNetmakerScript, which runs it against a Netmaker-shaped database",
	".ci/run":                                "CI",
	"integration/testdata/postgres-role.sql": "TestPostgresLeastPrivilegeRecipe",
}

// commandLanguages are the info strings of the blocks that hold commands
// or configuration to run; a block without one counts too.
var commandLanguages = map[string]bool{"": true, "sh": true, "bash": true, "shell": true, "console": true, "nginx": true, "sql": true}

// TestDocsCommandBlocksAreTested checks every command block of README.md
// and docs/*.md: it follows a comment <!-- from FILE --> naming one of
// testedFiles, and each of its lines starts a line of that file, in order.
func TestDocsCommandBlocksAreTested(t *testing.T) {
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range append([]string{"README.md"}, files...) {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		var prev string
		var block []string
		var lang, from string
		fenced := false
		blocks := 0
		sc := bufio.NewScanner(f)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			switch {
			case !fenced && strings.HasPrefix(line, "```"):
				fenced, block, lang, from = true, nil, strings.TrimPrefix(line, "```"), ""
				if c, ok := strings.CutPrefix(prev, "<!-- from "); ok {
					from = strings.TrimSuffix(c, " -->")
				}
				blocks++
			case fenced && line == "```":
				fenced = false
				if commandLanguages[lang] {
					checkBlock(t, file, n, from, block)
				}
			case fenced:
				block = append(block, sc.Text())
			}
			prev = line
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// checkBlock checks one command block, which ends on line n of file.
func checkBlock(t *testing.T, file string, n int, from string, block []string) {
	t.Helper()
	if _, ok := testedFiles[from]; !ok {
		t.Errorf("%s:%d: a command block that follows no <!-- from FILE --> of a tested file (%v)", file, n, keys(testedFiles))
		return
	}
	text, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(text), "\n")
	i := 0
	for _, want := range block {
		want = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(want), "#"))
		if want == "" {
			continue
		}
		for ; i < len(lines); i++ {
			got := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[i]), "#"))
			if got == want || strings.HasPrefix(got, want+" ") || strings.Contains(got, `"`+want+`"`) {
				break
			}
		}
		if i == len(lines) {
			t.Errorf("%s:%d: the block's line %q is not in %s (after the lines before it)", file, n, want, from)
			return
		}
		i++
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestDocsGoVersions checks the Go versions the README states: the
// library's is its go.mod's, and that of `go test work` is go.work's.
func TestDocsGoVersions(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, claim string }{
		{"go.mod", "The library needs Go %s or\nlater (its `go.mod` says `go %s.0`)"},
		{"go.work", "`go test\nwork` needs Go %s (the `go` line of `go.work`"},
	} {
		text, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^go (1\.[0-9]+)\.0$`).FindStringSubmatch(string(text))
		if m == nil {
			t.Fatalf("%s has no go line of the form go 1.N.0", c.file)
		}
		want := strings.ReplaceAll(c.claim, "%s", m[1])
		if !strings.Contains(strings.Join(strings.Fields(string(readme)), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("README.md does not say %q, as %s's go line %s.0 makes true", want, c.file, m[1])
		}
	}
}
