package main

import (
	"os"
	"strings"
	"testing"
)

// guide is the operator's guide, which shows nmauthd's usage.
const guide = "../../docs/nmauthd.md"

// TestDocsShowTheUsage checks that the guide's block of nmauthd --help is
// what nmauthd prints.
func TestDocsShowTheUsage(t *testing.T) {
	doc, err := os.ReadFile(guide)
	if err != nil {
		t.Fatal(err)
	}
	var usage strings.Builder
	(&cli{}).usage(&usage)
	_, after, ok := strings.Cut(string(doc), "<!-- the output of nmauthd --help -->\n```text\n")
	block, _, ok2 := strings.Cut(after, "```\n")
	if !ok || !ok2 {
		t.Fatalf("%s has no text block after <!-- the output of nmauthd --help -->", guide)
	}
	if block != usage.String() {
		t.Errorf("%s does not show what nmauthd --help prints; put this in its block:\n%s", guide, usage.String())
	}
}
