package memtable

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
)

type rec struct {
	Key  string
	Tags []string
}

type recKind struct{}

func (recKind) Clone(r rec) rec    { r.Tags = slices.Clone(r.Tags); return r }
func (recKind) Key(r *rec) *string { return &r.Key }

type table = Table[rec, recKind]

func TestCreateGetDelete(t *testing.T) {
	var tb table
	if _, ok := tb.Get("a"); ok {
		t.Fatal("Get of an empty table found a record")
	}
	if !tb.Create(rec{Key: "a", Tags: []string{"x"}}) {
		t.Fatal("Create of a new key failed")
	}
	if tb.Create(rec{Key: "a"}) {
		t.Fatal("Create of a taken key succeeded")
	}
	if got, ok := tb.Get("a"); !ok || !slices.Equal(got.Tags, []string{"x"}) {
		t.Fatalf("Get = %+v, %v; want the record created first", got, ok)
	}
	tb.Delete("a")
	tb.Delete("missing")
	if _, ok := tb.Get("a"); ok || tb.Len() != 0 {
		t.Fatalf("after Delete: found %v, Len %d", ok, tb.Len())
	}
}

func TestClonesInAndOut(t *testing.T) {
	var tb table
	in := rec{Key: "a", Tags: []string{"x"}}
	tb.Create(in)
	in.Tags[0] = "changed by the creator"
	got, _ := tb.Get("a")
	got.Tags[0] = "changed by a reader"
	tb.Update("a", func(r *rec) error { r.Tags[0] = "changed by an aborted update"; return errors.New("abort") })
	page := tb.Page("", 10)
	page[0].Tags[0] = "changed by a pager"
	if got, _ := tb.Get("a"); got.Tags[0] != "x" {
		t.Fatalf("stored record changed through a copy: %q", got.Tags[0])
	}
	put := rec{Key: "a", Tags: []string{"y"}}
	tb.Put(put)
	put.Tags[0] = "changed by the putter"
	if got, _ := tb.Get("a"); got.Tags[0] != "y" {
		t.Fatalf("Put kept the caller's array: %q", got.Tags[0])
	}
}

func TestUpdate(t *testing.T) {
	var tb table
	if ok, err := tb.Update("a", func(*rec) error { t.Fatal("fn called for a missing key"); return nil }); ok || err != nil {
		t.Fatalf("Update of a missing key = %v, %v", ok, err)
	}
	tb.Create(rec{Key: "a"})
	ok, err := tb.Update("a", func(r *rec) error { r.Key, r.Tags = "b", []string{"t"}; return nil })
	if !ok || err != nil {
		t.Fatalf("Update = %v, %v", ok, err)
	}
	if got, _ := tb.Get("a"); got.Key != "a" || !slices.Equal(got.Tags, []string{"t"}) {
		t.Fatalf("after Update: %+v; want the change under the same key", got)
	}
	if _, ok := tb.Get("b"); ok {
		t.Fatal("Update moved the record to the key fn wrote")
	}
	abort := errors.New("abort")
	if ok, err := tb.Update("a", func(r *rec) error { r.Tags = nil; return abort }); !ok || err != abort {
		t.Fatalf("aborted Update = %v, %v", ok, err)
	}
	if got, _ := tb.Get("a"); len(got.Tags) != 1 {
		t.Fatalf("aborted Update stored its change: %+v", got)
	}
}

func keys(rs []rec) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Key)
	}
	return out
}

func TestPage(t *testing.T) {
	var tb table
	for _, k := range []string{"c", "a", "B", "b"} {
		tb.Create(rec{Key: k})
	}
	tests := []struct {
		after string
		limit int
		want  []string
	}{
		{"", 10, []string{"B", "a", "b", "c"}},
		{"", 2, []string{"B", "a"}},
		{"a", 2, []string{"b", "c"}},
		{"ab", 10, []string{"b", "c"}},
		{"c", 10, nil},
		{"", 0, nil},
		{"", -1, nil},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%q/%d", tc.after, tc.limit), func(t *testing.T) {
			got := tb.Page(tc.after, tc.limit)
			if got == nil || !slices.Equal(keys(got), tc.want) {
				t.Errorf("Page = %q; want %q (as a non-nil slice)", keys(got), tc.want)
			}
			if shared := tb.PageShared(tc.after, tc.limit); !slices.Equal(keys(shared), tc.want) {
				t.Errorf("PageShared = %q; want %q", keys(shared), tc.want)
			}
		})
	}
	tb.Delete("a")
	tb.Put(rec{Key: "d"})
	if got := keys(tb.Page("", 10)); !slices.Equal(got, []string{"B", "b", "c", "d"}) {
		t.Fatalf("Page after a delete and a put = %q", got)
	}
}

func TestAllAllowsDelete(t *testing.T) {
	var tb table
	for _, k := range []string{"a", "b", "c", "d"} {
		tb.Create(rec{Key: k})
	}
	seen := 0
	for k := range tb.All() {
		seen++
		if k != "c" {
			tb.Delete(k)
		}
	}
	if seen == 0 || tb.Len() != 1 {
		t.Fatalf("All yielded %d, left %d records; want c alone", seen, tb.Len())
	}
	if got := keys(tb.Page("", 10)); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("Page after deletes in All = %q", got)
	}
}

// TestOwnerErrors: Find, Insert and Change answer with the owner's
// errors, and Lock and Do run nothing once ctx is done.
func TestOwnerErrors(t *testing.T) {
	missing, taken := errors.New("missing"), errors.New("taken")
	var tb Table[rec, recKind]
	if err := tb.Insert(rec{Key: "a"}, taken); err != nil {
		t.Fatal(err)
	}
	if err := tb.Insert(rec{Key: "a"}, taken); err != taken {
		t.Errorf("Insert of a taken key: %v; want taken", err)
	}
	if _, err := tb.Find("b", missing); err != missing {
		t.Errorf("Find of a missing key: %v; want missing", err)
	}
	if err := tb.Change("b", func(*rec) error { return nil }, missing); err != missing {
		t.Errorf("Change of a missing key: %v; want missing", err)
	}
	if err := tb.Remove("a"); err != nil || tb.Len() != 0 {
		t.Errorf("Remove: %v, %d left", err, tb.Len())
	}
	var mu sync.Mutex
	ctx, cancel := context.WithCancel(context.Background())
	if v, err := Lock(ctx, &mu, func() (int, error) { return 1, nil }); v != 1 || err != nil {
		t.Errorf("Lock = %d, %v", v, err)
	}
	cancel()
	ran := false
	if err := Do(ctx, &mu, func() error { ran = true; return nil }); err != context.Canceled || ran {
		t.Errorf("Do after cancel: %v, ran %v", err, ran)
	}
}
