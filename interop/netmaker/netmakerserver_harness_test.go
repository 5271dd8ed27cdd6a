package netmaker

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gravitl/netmaker/models"
)

// TestNetmakerServer proves the harness that the tests of nmauthd in
// front of Netmaker stand on: Netmaker v1.4.0's own server, built from
// its module, on SQLite and on PostgreSQL, with accounts made through
// its API; the real nmctl logs in to it and lists networks, and a host
// registered through its register route logs in and pulls its state
// with the token, as netclient does.
func TestNetmakerServer(t *testing.T) {
	for _, database := range []string{"sqlite", "postgres"} {
		t.Run(database, func(t *testing.T) {
			nm := startNetmaker(t, database)
			a := seedNetmaker(nm)

			home := t.TempDir()
			for _, args := range [][]string{
				{"context", "set", "netmaker", "--endpoint", nm.URL, "--username", a.User, "--password", a.UserPassword},
				{"context", "use", "netmaker"},
			} {
				if out, err := runNmctl(t, home, args...); err != nil {
					t.Fatalf("nmctl %v: %v\n%s", args, err, out)
				}
			}
			out, err := runNmctl(t, home, "network", "list")
			if err != nil || !strings.Contains(out, a.Network) {
				t.Fatalf("nmctl network list at Netmaker: %v\n%s", err, out)
			}

			tok := nm.HostLogin(a.HostID, a.HostPassword, a.HostMAC)
			var pull models.HostPull
			if st, b := nm.call(http.MethodGet, "/api/v1/host", tok, nil, &pull); st != http.StatusOK {
				t.Fatalf("GET /api/v1/host with the host's token: %d %s", st, b)
			}
			if pull.Host.ID != a.HostID || len(pull.Nodes) != 1 || pull.Nodes[0].Network != a.Network {
				t.Fatalf("GET /api/v1/host: host %s with %d nodes, want %s in %s", pull.Host.ID, len(pull.Nodes), a.HostID, a.Network)
			}

			// A wrong password is refused by Netmaker itself, so the
			// logins above were checked.
			if st, b := nm.call(http.MethodPost, "/api/users/adm/authenticate", "", models.UserAuthParams{UserName: a.User, Password: "wrong-password"}, nil); st == http.StatusOK {
				t.Fatalf("Netmaker let a wrong password in: %s", b)
			}

			if database == "sqlite" && !strings.HasSuffix(nm.DB, "/data/netmaker.db") {
				t.Errorf("DB = %q, want the SQLite file under data/", nm.DB)
			}
		})
	}
}
