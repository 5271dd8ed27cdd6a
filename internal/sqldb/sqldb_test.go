package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"testing"
)

// TestStatements: a table's statements are written from its columns, for
// each database, and only PostgreSQL's lock takes a row lock.
func TestStatements(t *testing.T) {
	for _, tc := range []struct {
		postgres                   bool
		lock, page, insert, update string
	}{
		{false, "SELECT k, v FROM t WHERE k = ?",
			"SELECT k, v FROM t WHERE k > ? ORDER BY k LIMIT ?",
			"INSERT INTO t (k, v) VALUES (?, ?) ON CONFLICT (k) DO NOTHING",
			"UPDATE t SET v = ? WHERE k = ?"},
		{true, "SELECT k, v FROM t WHERE k = $1 FOR UPDATE",
			`SELECT k, v FROM t WHERE k COLLATE "C" > $1 ORDER BY k COLLATE "C" LIMIT $2`,
			"INSERT INTO t (k, v) VALUES ($1, $2) ON CONFLICT (k) DO NOTHING",
			"UPDATE t SET v = $1 WHERE k = $2"},
	} {
		tb := recs.On(&DB{Postgres: tc.postgres})
		if tb.lock != tc.lock || tb.page != tc.page || tb.insert != tc.insert || tb.update != tc.update {
			t.Errorf("postgres %v: lock %q, page %q, insert %q, update %q", tc.postgres, tb.lock, tb.page, tb.insert, tb.update)
		}
	}
	collated := recs
	collated.Collated = true
	if got := collated.On(&DB{Postgres: true}).page; got != "SELECT k, v FROM t WHERE k > $1 ORDER BY k LIMIT $2" {
		t.Errorf("collated page %q", got)
	}
}

// TestInTx: fn's error rolls back and is returned unchanged; the error of
// Miss commits the miss's count and is NotFound.
func TestInTx(t *testing.T) {
	tb, f := openFake(t, map[string]any{})
	ctx := context.Background()
	errFn := errors.New("from fn")
	if err := tb.db.InTx(ctx, "x", func(*sql.Tx) error { return errFn }); err != errFn {
		t.Errorf("fn's error: %v", err)
	}
	if l := f.logged(); !slices.Equal(l, []string{"ROLLBACK"}) {
		t.Errorf("fn's error ran %q", l)
	}
	err := tb.db.InTx(ctx, "x", func(tx *sql.Tx) error { return tb.db.Miss(ctx, tx, "nobody") })
	if err != errNotFound || f.misses != 1 {
		t.Errorf("miss: %v, %d misses", err, f.misses)
	}
	if l := f.logged(); len(l) != 2 || l[1] != "COMMIT" {
		t.Errorf("miss ran %q", l)
	}
}

// TestWriteQueue: on SQLite a transaction waits for the one before it,
// and one whose context ends while it waits fails without starting.
func TestWriteQueue(t *testing.T) {
	tb, f := openFake(t, map[string]any{})
	ctx, cancel := context.WithCancel(context.Background())
	err := tb.db.InTx(context.Background(), "first", func(*sql.Tx) error {
		cancel()
		return tb.db.InTx(ctx, "second", func(*sql.Tx) error {
			t.Error("second transaction ran beside the first")
			return nil
		})
	})
	if !errors.Is(err, context.Canceled) || err.Error() != "nmauth: sql store: second: context canceled" {
		t.Errorf("waiting transaction: %v", err)
	}
	if l := f.logged(); !slices.Equal(l, []string{"ROLLBACK"}) {
		t.Errorf("ran %q", l)
	}
}

// TestTable: a record is created once, read, updated, listed, and deleted;
// a missing one is NotFound, a broken one's read is its error, and a
// listing keeps it, marked.
func TestTable(t *testing.T) {
	tb, f := openFake(t, map[string]any{"b": "text"})
	ctx := context.Background()
	if err := tb.Create(ctx, rec{K: "a", V: 1}); err != nil {
		t.Fatal(err)
	}
	if err := tb.Create(ctx, rec{K: "a", V: 2}); err != errExists {
		t.Errorf("second create: %v", err)
	}
	if err := tb.Update(ctx, "a", func(r *rec) error { r.V++; return nil }); err != nil {
		t.Fatal(err)
	}
	if r, err := tb.Get(ctx, "a"); err != nil || r.V != 2 {
		t.Errorf("get a: %v, %v", r, err)
	}
	if _, err := tb.Get(ctx, "c"); err != errNotFound {
		t.Errorf("get missing: %v", err)
	}
	if err := tb.Update(ctx, "c", func(*rec) error { t.Error("fn of a missing record"); return nil }); err != errNotFound || f.misses != 1 {
		t.Errorf("update missing: %v, %d misses", err, f.misses)
	}
	if _, err := tb.Get(ctx, "b"); !errors.Is(err, errBroken) {
		t.Errorf("get broken: %v", err)
	}
	page, err := tb.Page(ctx, "", 10)
	if err != nil || len(page) != 2 || page[0].K != "a" || page[1].K != "b" || !slices.Equal(page[1].Broken, []string{"v"}) {
		t.Errorf("page: %v, %v", page, err)
	}
	n, last, broken, err := tb.BrokenPage(ctx, "", 1)
	if err != nil || n != 1 || last != "a" || broken != nil {
		t.Errorf("first broken page: %d, %q, %v, %v", n, last, broken, err)
	}
	if n, last, broken, err = tb.BrokenPage(ctx, "a", 1); err != nil || n != 1 || last != "b" || len(broken) != 1 {
		t.Errorf("second broken page: %d, %q, %v, %v", n, last, broken, err)
	}
	if err := tb.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Get(ctx, "a"); err != errNotFound {
		t.Errorf("get deleted: %v", err)
	}
}

// TestUpdateAll: a batch locks its rows in the order of their keys and
// tells each update its outcome; only written records change.
func TestUpdateAll(t *testing.T) {
	tb, f := openFake(t, map[string]any{"a": int64(1), "b": "text", "c": int64(3)})
	ctx := context.Background()
	if err := tb.Prepare(ctx, true); err != nil {
		t.Fatal(err)
	}
	errFn := errors.New("refused")
	keys := []string{"c", "missing", "a", "b"}
	got := make([]error, len(keys))
	var order []string
	err := tb.UpdateAll(ctx, keys, func(i int, r *rec) error {
		order = append(order, keys[i])
		if keys[i] == "a" {
			return errFn
		}
		r.V = 30
		return nil
	}, func(i int, err error) { got[i] = err })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, []string{"a", "c"}) {
		t.Errorf("updated in the order %q", order)
	}
	if got[0] != nil || got[1] != errNotFound || got[2] != errFn || !errors.Is(got[3], errBroken) {
		t.Errorf("outcomes %v", got)
	}
	if f.rows["a"] != int64(1) || f.rows["c"] != int64(30) {
		t.Errorf("rows %v", f.rows)
	}
}

// TestRepair: a repair runs only while the record is still broken in the
// way it was found.
func TestRepair(t *testing.T) {
	tb, f := openFake(t, map[string]any{"a": "text"})
	ctx := context.Background()
	broken := func(r rec) bool { return slices.Contains(r.Broken, "v") }
	fix := func() []any { return []any{int64(0)} }
	if err := tb.Repair(ctx, "repair", "a", broken, "UPDATE t SET v = ? WHERE k = ?", fix); err != nil {
		t.Fatal(err)
	}
	if f.rows["a"] != int64(0) {
		t.Errorf("after repair: %v", f.rows["a"])
	}
	f.logged()
	if err := tb.Repair(ctx, "repair", "a", broken, "UPDATE t SET v = ? WHERE k = ?", fix); err != nil {
		t.Fatal(err)
	}
	if l := f.logged(); len(l) != 2 || l[1] != "COMMIT" {
		t.Errorf("repair of a sound record ran %q", l)
	}
}
