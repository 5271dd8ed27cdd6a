package nmauth_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// figureDocs are the documents whose figures, commands and links
// TestFigureDocs* hold to the code.
var figureDocs = []string{"BENCHMARKS.md", "RELIABILITY.md"}

// figReadDoc reads a document of the repository's root.
func figReadDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// figHeadingAnchors gives the anchors GitHub makes of a Markdown document's
// headings: lower case, punctuation dropped, spaces as hyphens, a repeat
// numbered.
func figHeadingAnchors(doc string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	inCode := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && (unicode.IsLetter(r) || unicode.IsDigit(r)):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// figMdLink is the target of a Markdown link.
var figMdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestFigureDocsLinksResolve checks that every relative link of the
// figure documents names a file of the repository, and an anchor a
// heading of its document.
func TestFigureDocsLinksResolve(t *testing.T) {
	for _, name := range figureDocs {
		doc := figReadDoc(t, name)
		links := figMdLink.FindAllStringSubmatch(doc, -1)
		for _, m := range links {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			linked := doc
			if path != "" {
				full := filepath.Join(filepath.Dir(name), filepath.FromSlash(path))
				if _, err := os.Stat(full); err != nil {
					t.Errorf("%s links to %s, which the repository lacks", name, target)
					continue
				}
				if anchor == "" || !strings.HasSuffix(path, ".md") {
					continue
				}
				linked = figReadDoc(t, full)
			}
			if anchor != "" && !figHeadingAnchors(linked)[anchor] {
				t.Errorf("%s links to %s, whose document has no heading of that anchor", name, target)
			}
		}
	}
}

// figFileName is a path of the repository as the documents name one: a Go
// file, a Markdown document or a script, with its directories.
var figFileName = regexp.MustCompile(`(?:^|[\s(\x60'"])((?:[\w.-]+/)*[\w-]+\.(?:go|md|sh|yaml|yml|sql))(?:$|[\s),.:;\x60'"])`)

// TestFigureDocsNameOnlyFilesThatExist checks that every file the figure
// documents name, by its path from the repository's root, is there.
func TestFigureDocsNameOnlyFilesThatExist(t *testing.T) {
	for _, name := range figureDocs {
		for _, line := range strings.Split(figReadDoc(t, name), "\n") {
			for _, m := range figFileName.FindAllStringSubmatch(line, -1) {
				if strings.Contains(line, "://"+m[1]) {
					continue
				}
				if _, err := os.Stat(filepath.FromSlash(m[1])); err != nil {
					t.Errorf("%s names %s, which the repository lacks: %q", name, m[1], line)
				}
			}
		}
	}
}

// figBenchSources are the directories whose benchmarks the documents cite.
var figBenchSources = []string{".", "integration"}

// figBenchmarkNames reads the test files of figBenchSources: the names of
// their Benchmark functions, and every string literal (the sub-benchmarks'
// names are made of them).
func figBenchmarkNames(t *testing.T) (funcs []string, literals []string) {
	t.Helper()
	fset := token.NewFileSet()
	for _, dir := range figBenchSources {
		files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range file.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Benchmark") {
					funcs = append(funcs, fn.Name.Name)
				}
			}
			ast.Inspect(file, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil {
						literals = append(literals, s)
					}
				}
				return true
			})
		}
	}
	return funcs, literals
}

// figBenchFlag is a -bench or -test.bench flag and its pattern, quoted or not.
var figBenchFlag = regexp.MustCompile(`-(?:test\.)?bench(?:=|\s+)(?:'([^']*)'|"([^"]*)"|([^\s\x60]+))`)

// figSplitTop splits a pattern at sep where no bracket or parenthesis is
// open, as the testing package splits -bench at its slashes.
func figSplitTop(pattern string, sep byte) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; {
		case c == '(' || c == '[':
			depth++
		case c == ')' || c == ']':
			depth--
		case c == '\\':
			i++
		case c == sep && depth == 0:
			parts = append(parts, pattern[start:i])
			start = i + 1
		}
	}
	return append(parts, pattern[start:])
}

var figSubWord = regexp.MustCompile(`[A-Za-z0-9][\w=.-]*`)

// TestBenchmarksDocBenchNamesExist checks that every benchmark a -bench
// pattern of BENCHMARKS.md names exists: the first level of each
// alternative matches a Benchmark function of the root or integration
// packages, and each word of a later level is part of a string those test
// files spell, of which the sub-benchmarks' names are made. It reads the sources rather
// than running anything.
func TestBenchmarksDocBenchNamesExist(t *testing.T) {
	funcs, literals := figBenchmarkNames(t)
	doc := figReadDoc(t, "BENCHMARKS.md")
	patterns := figBenchFlag.FindAllStringSubmatch(doc, -1)
	if len(patterns) < 5 {
		t.Fatalf("found %d -bench patterns in BENCHMARKS.md; the pattern of this test no longer reads its commands", len(patterns))
	}
	for _, m := range patterns {
		pattern := m[1] + m[2] + m[3]
		if pattern == "." {
			continue
		}
		// As the testing package reads -bench: alternatives at the top,
		// each a path of levels.
		for _, alt := range figSplitTop(pattern, '|') {
			levels := figSplitTop(alt, '/')
			top := levels[0]
			re, err := regexp.Compile(top)
			if err != nil {
				t.Errorf("-bench %q: %v", pattern, err)
				continue
			}
			found := false
			for _, f := range funcs {
				if re.MatchString(f) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("-bench %q: no benchmark function matches %q", pattern, top)
			}
			for _, level := range levels[1:] {
				for _, w := range figSubWord.FindAllString(level, -1) {
					found := false
					for _, l := range literals {
						if strings.Contains(l, w) {
							found = true
							break
						}
					}
					if !found {
						t.Errorf("-bench %q: no sub-benchmark of the test files is named with %q", pattern, w)
					}
				}
			}
		}
	}
}

// figToolFlags are the flags a command defines, read from its sources.
func figToolFlags(t *testing.T, glob string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no sources at %s: %v", glob, err)
	}
	def := regexp.MustCompile(`\.(?:String|Int|Bool|Duration|Float64|Uint64|Int64|Func|Var|TextVar)(?:Var)?\([^,"]*,?\s*"([a-z][a-z0-9.-]*)"`)
	flags := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range def.FindAllStringSubmatch(string(b), -1) {
			flags[m[1]] = true
		}
	}
	return flags
}

// figCommandFlag is a flag given to a command: -name or --name after a space.
var figCommandFlag = regexp.MustCompile(`\s--?([a-z][a-z0-9.-]*)`)

var figCodeSpan = regexp.MustCompile("`([^`]+)`")

// figDocCode gives a Markdown document's code: the lines of its code blocks,
// fenced or indented, and its inline code spans, with a shell line's
// continuations joined.
func figDocCode(doc string) []string {
	var code []string
	fenced := false
	for _, line := range strings.Split(strings.ReplaceAll(doc, "\\\n", " "), "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			fenced = !fenced
		case fenced || strings.HasPrefix(line, "    "):
			if i := strings.Index(" "+line, " #"); i >= 0 {
				line = line[:i] // a shell comment
			}
			code = append(code, line)
		default:
			for _, m := range figCodeSpan.FindAllStringSubmatch(line, -1) {
				code = append(code, m[1])
			}
		}
	}
	return code
}

// TestFigureDocsToolFlagsExist checks that every flag the figure documents
// give nmauth-load or nmauthd in their commands is one the tool defines.
func TestFigureDocsToolFlagsExist(t *testing.T) {
	tools := map[string]map[string]bool{
		"nmauth-load": figToolFlags(t, "cmd/nmauth-load/*.go"),
		"nmauthd":     figToolFlags(t, "cmd/nmauthd/*.go"),
	}
	checked := 0
	for _, name := range figureDocs {
		for _, line := range figDocCode(figReadDoc(t, name)) {
			for tool, flags := range tools {
				for _, seg := range strings.Split(line, tool+" ")[1:] {
					// The command ends where the shell takes over.
					if i := strings.IndexAny(seg, "&|;#"); i >= 0 {
						seg = seg[:i]
					}
					for _, m := range figCommandFlag.FindAllStringSubmatch(" "+seg, -1) {
						checked++
						if !flags[m[1]] {
							t.Errorf("%s gives %s the flag -%s, which it does not define: %q", name, tool, m[1], line)
						}
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no flags found in the documents' commands; the pattern of this test no longer reads them")
	}
}

// figCommitHash is how the documents name a commit: 7 to 40 hex digits, with
// a letter and a digit among them.
var figCommitHash = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)

// figUnit marks a measured figure: a time, a size or a rate.
var figUnit = regexp.MustCompile(`\d\s?(?:ns|µs|ms|MiB|KiB|req/s|logins/s)\b|[0-9]\.[0-9]+×`)

// TestFigureDocsNameTheirCommits checks that every section of the figure
// documents that gives a figure names a commit it was measured on.
func TestFigureDocsNameTheirCommits(t *testing.T) {
	for _, name := range figureDocs {
		sections := strings.Split("\n"+figReadDoc(t, name), "\n## ")
		for _, s := range sections[1:] {
			heading, _, _ := strings.Cut(s, "\n")
			if !figUnit.MatchString(s) {
				continue
			}
			named := false
			for _, h := range figCommitHash.FindAllString(s, -1) {
				if strings.ContainsAny(h, "abcdef") && strings.ContainsAny(h, "0123456789") {
					named = true
					break
				}
			}
			if !named {
				t.Errorf("%s, section %q, gives figures without the commit they were measured on", name, heading)
			}
		}
	}
}
