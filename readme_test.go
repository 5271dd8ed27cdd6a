package nmauth_test

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEMountingIsTheExample checks that the README's "Mounting it"
// program is Example_mounting, which the compiler checks, as a main
// package.
func TestREADMEMountingIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "## Mounting it\n")
	_, block, ok2 := strings.Cut(section, "```go\n")
	block, _, ok3 := strings.Cut(block, "```\n")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README.md has no Go block under \"## Mounting it\"")
	}
	example, err := os.ReadFile("example_mounting_test.go")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer("package nmauth_test\n", "package main\n", "func Example_mounting() {", "func main() {").Replace(string(example))
	if block != want {
		t.Errorf("the README's program is not example_mounting_test.go; put this in README.md:\n%s", want)
	}
}

// TestREADMEEmbedderFirst checks that the README reads embedder-first:
// the mounting program starts within its first screen, and its contents
// line links every section.
func TestREADMEEmbedderFirst(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(readme), "\n")
	contents := ""
	for i, line := range lines {
		if strings.HasPrefix(line, "**Contents:**") {
			contents = line
		}
		if line == "## Mounting it" && i >= 50 {
			t.Errorf("\"## Mounting it\" is on line %d, past the first screen of 50 lines", i+1)
		}
		if h, ok := strings.CutPrefix(line, "## "); ok && !strings.Contains(contents, "["+h+"](#") {
			t.Errorf("the contents line does not link the section %q", h)
		}
	}
	if contents == "" {
		t.Error("README.md has no contents line")
	}
}
