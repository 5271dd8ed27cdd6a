package main

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// fakeConn stands for a connection in the table's tests; only its
// identity matters.
type fakeConn struct {
	net.Conn
	name string
}

// tableSteps drives a connTable by name: "+A1" admits connection A1 of
// group A (10.0.<A>.0/24), "+P1" of a trusted proxy's group P (not capped
// per group), "A1 idle", "A1 busy", "A1 closed" report the server's view.
type tableSteps struct {
	t     *testing.T
	table *connTable
	conns map[string]*fakeConn
}

func newTableSteps(t *testing.T, total, perGroup int) *tableSteps {
	return &tableSteps{t: t, table: newConnTable(total, perGroup), conns: map[string]*fakeConn{}}
}

func groupOf(name string) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, name[0], 0}), 24)
}

// admit admits name and returns what happened: "closed X" for the
// connection closed to make room, "refused", or "" for a free place.
func (s *tableSteps) admit(name string) string {
	s.t.Helper()
	c := &fakeConn{name: name}
	victim, ok := s.table.admit(c, groupOf(name), name[0] != 'P')
	switch {
	case !ok:
		return "refused"
	case victim != nil:
		s.conns[name] = c
		return "closed " + victim.(*fakeConn).name
	}
	s.conns[name] = c
	return ""
}

func (s *tableSteps) run(steps string) []string {
	s.t.Helper()
	var got []string
	for _, step := range strings.Split(steps, ",") {
		step = strings.TrimSpace(step)
		if name, ok := strings.CutPrefix(step, "+"); ok {
			if r := s.admit(name); r != "" {
				got = append(got, name+": "+r)
			}
			continue
		}
		name, state, _ := strings.Cut(step, " ")
		c := s.conns[name]
		if c == nil {
			s.t.Fatalf("step %q: no connection %s", step, name)
		}
		s.table.track(c, map[string]http.ConnState{
			"new": http.StateNew, "busy": http.StateActive, "idle": http.StateIdle, "closed": http.StateClosed,
		}[state])
	}
	return got
}

// TestConnTable: at a cap, the table closes the oldest connection that has
// sent nothing of the newcomer's group (at the group's cap) or of the
// group that holds the most (at the total cap), then an idle one, and
// refuses the newcomer only when every connection it could close is busy.
func TestConnTable(t *testing.T) {
	cases := []struct {
		name            string
		total, perGroup int
		steps           string
		want            []string // what the admits did, in order
		open            int
	}{
		{"under the caps every connection is admitted", 4, 4,
			"+A1, +A2, +B1, +C1", nil, 4},
		{"at the total cap the largest group's oldest silent one goes", 4, 4,
			"+B1, +A1, +A2, +A3, +C1", []string{"C1: closed A1"}, 4},
		{"of groups as large, the one whose silent one waited longest", 3, 4,
			"+A1, +B1, +C1, +D1, +E1", []string{"D1: closed A1", "E1: closed B1"}, 3},
		{"a newcomer of the largest group pushes out its own group's", 4, 4,
			"+A1, +A2, +A3, +B1, +A4", []string{"A4: closed A1"}, 4},
		{"silent before idle, however large the idle group", 4, 4,
			"+A1, +A2, +A3, A1 idle, A2 idle, A3 idle, +B1, +C1", []string{"C1: closed B1"}, 4},
		{"idle once none is silent, oldest idle first", 3, 4,
			"+A1, +A2, +B1, A2 idle, A1 idle, B1 busy, +C1", []string{"C1: closed A2"}, 3},
		{"busy connections are never closed", 2, 4,
			"+A1, +B1, A1 busy, B1 busy, +C1, +A2", []string{"C1: refused", "A2: refused"}, 2},
		{"a connection that sent its request is safe from a silent flood", 3, 4,
			"+A1, +A2, +B1, B1 busy, +A3, +A4, +A5", []string{"A3: closed A1", "A4: closed A2", "A5: closed A3"}, 3},
		{"at its group's cap a newcomer pushes out its group's oldest silent", 10, 2,
			"+A1, +B1, +A2, +A3", []string{"A3: closed A1"}, 3},
		{"at its group's cap with all busy a newcomer is refused, others admitted", 10, 2,
			"+A1, +A2, A1 busy, A2 busy, +A3, +B1", []string{"A3: refused"}, 3},
		{"at its group's cap an idle one goes when none is silent", 10, 2,
			"+A1, +A2, A1 busy, A2 idle, +A3", []string{"A3: closed A2"}, 2},
		{"a trusted proxy is held to the total only", 4, 2,
			"+P1, +P2, +P3, +P4, +P5", []string{"P5: closed P1"}, 4},
		{"closed and hijacked connections free their places", 2, 2,
			"+A1, +A2, A1 busy, A2 busy, A1 closed, +B1, B1 busy, A2 closed, +B2", nil, 2},
		{"a closed connection's late report changes nothing", 1, 1,
			"+A1, +B1, A1 closed, A1 idle, +C1", []string{"B1: closed A1", "C1: closed B1"}, 1},
		{"back from busy a connection is idle, never silent again", 2, 2,
			"+A1, A1 busy, A1 idle, +B1, +C1", []string{"C1: closed B1"}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newTableSteps(t, tc.total, tc.perGroup)
			got := s.run(tc.steps)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if open, _ := s.table.counts(netip.Prefix{}); open != tc.open {
				t.Errorf("%d open, want %d", open, tc.open)
			}
		})
	}
}

// TestConnTableSilentFlood: 25,000 connections that send nothing from 100
// /24s, against a total cap of 1,000, never close a client of another
// group that opened its connection while the flood went on, and each
// group of the flood keeps about its share.
func TestConnTableSilentFlood(t *testing.T) {
	const total, groups, flood = 1000, 100, 25000
	table := newConnTable(total, 1024)
	login := &fakeConn{name: "login"}
	loginGroup := netip.MustParsePrefix("192.0.2.0/24")
	for i := range flood {
		if i == flood/2 {
			if victim, ok := table.admit(login, loginGroup, true); !ok || victim == login {
				t.Fatalf("the login's connection: admitted %v, closing %v", ok, victim)
			}
		}
		g := netip.PrefixFrom(netip.AddrFrom4([4]byte{127, 1, byte(i % groups), 0}), 24)
		victim, ok := table.admit(&fakeConn{name: fmt.Sprint(i)}, g, true)
		if !ok {
			t.Fatalf("flood connection %d refused: a silent one could have been closed", i)
		}
		if victim == login {
			t.Fatalf("flood connection %d closed the login's connection", i)
		}
	}
	open, inLogin := table.counts(loginGroup)
	if open != total || inLogin != 1 {
		t.Fatalf("%d open, %d of the login's group; want %d and 1", open, inLogin, total)
	}
	for i := range groups {
		g := netip.PrefixFrom(netip.AddrFrom4([4]byte{127, 1, byte(i), 0}), 24)
		if _, n := table.counts(g); n < total/groups-2 || n > total/groups+1 {
			t.Errorf("group %s holds %d connections, want about %d", g, n, total/groups)
		}
	}
}

// TestConnCaps: the total cap is below the file limit by what nmauthd
// keeps for its store and listeners, at most maxConnsCeiling unless
// --max-conns says more; a cap the file limit cannot hold is refused with
// a line that says what to change.
func TestConnCaps(t *testing.T) {
	cases := []struct {
		name               string
		maxConns, perGroup int
		fdLimit            uint64
		wantTotal, wantPer int
		wantErr            string
	}{
		{"default under a file limit of 20,000", 0, 1024, 20000, maxConnsCeiling, 1024, ""},
		{"default under a file limit of 4,096", 0, 1024, 4096, 4096 - fdReserve, 1024, ""},
		{"default under no file limit", 0, 1024, ^uint64(0), maxConnsCeiling, 1024, ""},
		{"default where the limit is unknown", 0, 1024, 0, maxConnsCeiling, 1024, ""},
		{"per group at most the total", 0, 1024, 600, 600 - fdReserve, 600 - fdReserve, ""},
		{"an explicit total under the limit", 50000, 64, 1 << 20, 50000, 64, ""},
		{"an explicit total over the limit", 20000, 64, 20000, 0, 0, "--max-conns 20000 is more than the file limit allows"},
		{"a file limit with no room", 0, 64, fdReserve, 0, 0, "raise it (ulimit -n"},
		{"a negative total", -1, 64, 20000, 0, 0, "--max-conns -1"},
		{"no connection per group", 0, 0, 20000, 0, 0, "--max-conns-per-group 0: must be at least 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			total, per, err := connCaps(tc.maxConns, tc.perGroup, tc.fdLimit)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %d, %d, %v; want an error saying %q", total, per, err, tc.wantErr)
				}
				return
			}
			if err != nil || total != tc.wantTotal || per != tc.wantPer {
				t.Fatalf("got %d, %d, %v; want %d, %d", total, per, err, tc.wantTotal, tc.wantPer)
			}
			if tc.fdLimit > 0 && uint64(total) >= tc.fdLimit {
				t.Fatalf("a total of %d under a file limit of %d", total, tc.fdLimit)
			}
		})
	}
}
