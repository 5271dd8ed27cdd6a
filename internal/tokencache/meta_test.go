package tokencache

import (
	"math"
	"strings"
	"testing"
	"unsafe"
)

// TestMetaRoundTrip: every field packed comes back, at the ends of its
// ranges too.
func TestMetaRoundTrip(t *testing.T) {
	for _, c := range []struct {
		kind              int
		expires           int64
		name, network, id int
		totp, generation  bool
	}{
		{0, 0, 0, 0, 0, false, false},
		{1, 1772366460, 5, 0, 22, true, false},
		{2, math.MaxUint32, LenMax, LenMax, LenMax, true, true},
		{3, 42, 1, 2, 3, false, true},
	} {
		m := PackMeta(c.kind, c.expires, c.name, c.network, c.id, c.totp, c.generation)
		strs := strings.Repeat("n", c.name) + strings.Repeat("w", c.network) + strings.Repeat("i", c.id)
		n, e, got := m.Strings(unsafe.StringData(strs))
		if m.Ext() || m.Kind() != c.kind || m.Expires() != c.expires || m.TOTP() != c.totp || m.Generation() != c.generation ||
			n != c.name || e != c.name+c.network || got != strs {
			t.Errorf("%+v packs as %#x, which reads back otherwise", c, uint64(m))
		}
	}
}

// TestExtMetaClamps: a principal kept whole keeps its expiry, clamped to
// the range of a Meta.
func TestExtMetaClamps(t *testing.T) {
	for expires, want := range map[int64]int64{-5: 0, 0: 0, 1772366460: 1772366460, math.MaxUint32 + 1: math.MaxUint32} {
		if m := ExtMeta(expires); !m.Ext() || m.Expires() != want {
			t.Errorf("ExtMeta(%d): ext %v, expires %d, want %d", expires, m.Ext(), m.Expires(), want)
		}
	}
}
