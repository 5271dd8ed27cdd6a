package sqlrepair

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// TestScan walks two kinds of record a page at a time: a full page
// continues its kind after its last key, a short one starts the next
// kind, and the last kind's short page ends the scan.
func TestScan(t *testing.T) {
	keys := map[string][]string{"user": {"a", "b", "c"}, "host": {"h"}}
	page := func(kind string) func(context.Context, string, int) (int, string, []error, error) {
		return func(_ context.Context, after string, limit int) (int, string, []error, error) {
			var got []string
			for _, k := range keys[kind] {
				if k > after && len(got) < limit {
					got = append(got, k)
				}
			}
			if len(got) == 0 {
				return 0, "", nil, nil
			}
			return len(got), got[len(got)-1], []error{fmt.Errorf("%s %s", kind, got[0])}, nil
		}
	}
	kinds := []Kind{{"user", page("user")}, {"host", page("host")}}
	var positions []string
	var found []string
	for after := ""; ; {
		broken, next, err := Scan(context.Background(), kinds, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range broken {
			found = append(found, err.Error())
		}
		positions = append(positions, next)
		if after = next; after == "" {
			break
		}
	}
	if !slices.Equal(positions, []string{"user:b", "host:", ""}) || !slices.Equal(found, []string{"user a", "user c", "host h"}) {
		t.Errorf("positions %q, found %q", positions, found)
	}
	if _, _, err := Scan(context.Background(), kinds, "group:x", 2); !errors.Is(err, errPosition) {
		t.Errorf("unknown position: %v", err)
	}
	if _, _, err := Scan(context.Background(), kinds, "", 0); !errors.Is(err, errLimit) {
		t.Errorf("no limit: %v", err)
	}
}
