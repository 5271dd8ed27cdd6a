package reqctx

import (
	"context"
	"net/netip"
	"testing"
)

type key struct{}

func TestZeroNamesNone(t *testing.T) {
	var c Client
	if v, ok := c.Value(context.Background(), key{}); ok || v != nil {
		t.Errorf("zero Client = %v, %v", v, ok)
	}
}

func TestName(t *testing.T) {
	var c Client
	want := netip.MustParseAddr("192.0.2.7")
	c.Name(want)
	// A named address wins over the parent's.
	parent := context.WithValue(context.Background(), key{}, netip.MustParseAddr("198.51.100.1"))
	v, ok := c.Value(parent, key{})
	if p, isPtr := v.(*netip.Addr); !ok || !isPtr || *p != want {
		t.Errorf("Value = %v, %v; want a pointer to %v", v, ok, want)
	}
}

func TestRemote(t *testing.T) {
	for remote, want := range map[string]netip.Addr{
		"192.0.2.7:5678":        netip.MustParseAddr("192.0.2.7"),
		"[2001:db8::1:2]:443":   netip.MustParseAddr("2001:db8::"),
		"[2001:db8:0:1::9]:443": netip.MustParseAddr("2001:db8:0:1::"),
	} {
		var c Client
		c.SetRemote(remote)
		if v, ok := c.Value(context.Background(), key{}); !ok || v != want {
			t.Errorf("remote %q: Value = %v, %v; want %v", remote, v, ok, want)
		}
	}
}

func TestRemoteDefersToParent(t *testing.T) {
	var c Client
	c.SetRemote("192.0.2.7:5678")
	named := netip.MustParseAddr("198.51.100.1")
	parent := context.WithValue(context.Background(), key{}, &named)
	if v, ok := c.Value(parent, key{}); !ok || v != any(&named) {
		t.Errorf("Value = %v, %v; want the parent's %v", v, ok, &named)
	}
}
