package sqlrepair

import (
	"strings"
	"testing"

	"github.com/nmauth/nmauth/internal/hashfmt"
)

// TestTable: every repair's statement updates its kind's table, takes
// the arguments it is given and then the key, and names the column it
// repairs.
func TestTable(t *testing.T) {
	table := Table(func() int64 { return 42 })
	where := map[string]string{"user": "nmauth_users", "host": "nmauth_hosts"}
	for kind, repairs := range table {
		for column, r := range repairs {
			var args []any
			if r.Args != nil {
				args = r.Args()
			}
			if !strings.HasPrefix(r.Query, "UPDATE "+where[kind]+" SET ") || strings.Count(r.Query, "?") != len(args)+1 ||
				!strings.Contains(r.Query, column+" = ") {
				t.Errorf("%s %s: %q with arguments %v", kind, column, r.Query, args)
			}
		}
	}
	if len(table["user"]) != 15 || len(table["host"]) != 8 {
		t.Errorf("%d repairs of users, %d of hosts", len(table["user"]), len(table["host"]))
	}
	if got := table["user"]["totp_last_step"].Args(); got[0] != int64(42) {
		t.Errorf("last TOTP step repaired to %v", got)
	}
}

// TestLockedPassword disables the account and gives it a house argon2id
// hash of new random bytes each time.
func TestLockedPassword(t *testing.T) {
	a, b := lockedPassword(), lockedPassword()
	h, err := hashfmt.ParseArgon2id(a[0].(string))
	if err != nil || h.WeakerThanCurrent() || a[1] != true {
		t.Fatalf("locked password %v: %v", a, err)
	}
	if a[0] == b[0] {
		t.Errorf("two locked passwords are the same hash %v", a[0])
	}
	if g, h := newRandomGeneration(), newRandomGeneration(); g[0] == h[0] {
		t.Errorf("two new generations are %v", g[0])
	}
}
