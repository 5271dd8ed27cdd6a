package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestHostList lists the hosts added with host add, in byte order, each
// with its MAC address or "-".
func TestHostList(t *testing.T) {
	dir := t.TempDir()
	env := baseEnv("MASTER_KEY=" + testMasterKey)
	db := filepath.Join(dir, "nmauth.db")
	seed(t, dir, env, db)
	mustRun(t, dir, env, "host-password-2\n", "host", "add", "Web-2", "--db", db)
	out := mustRun(t, dir, env, "", "host", "list", "--db", db)
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		rows = append(rows, strings.Join(strings.Fields(l), " "))
	}
	want := []string{"ID DISABLED MAC", "Web-2 no -", "web-1 no 00:11:22:aa:bb:cc"}
	if !slices.Equal(rows, want) {
		t.Errorf("host list = %q, want %q", rows, want)
	}
}

// TestWritePages pages through more records than one page holds and
// requires every record once, in order, after the header.
func TestWritePages(t *testing.T) {
	var keys []string
	for i := range 2*listPage + 7 {
		keys = append(keys, fmt.Sprintf("k%05d", i))
	}
	calls := 0
	list := func(_ context.Context, after string, limit int) ([]string, error) {
		calls++
		if limit != listPage {
			t.Fatalf("limit %d, want %d", limit, listPage)
		}
		i, _ := slices.BinarySearch(keys, after)
		if i < len(keys) && keys[i] == after {
			i++
		}
		return keys[i:min(i+limit, len(keys))], nil
	}
	var out bytes.Buffer
	id := func(s string) string { return s }
	if err := writePages(context.Background(), &out, "KEY", list, id, id); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(out.String()), "\n")
	if want := append([]string{"KEY"}, keys...); !slices.Equal(got, want) {
		t.Errorf("wrote %d lines, want the header and %d keys in order", len(got), len(keys))
	}
	if calls != 3 {
		t.Errorf("%d pages read, want 3", calls)
	}
}
