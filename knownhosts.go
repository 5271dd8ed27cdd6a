package nmauth

import (
	"context"

	"github.com/nmauth/nmauth/internal/knownset"
	"github.com/nmauth/nmauth/internal/state"
)

// The host-login gate places a login by the known hosts: a compact set of
// (host id, client) pairs, a host at a client address it logged in rightly
// from (see internal/knownset). It places a login, it grants nothing, and
// it reads no Store to do so, for a read to place a login would be the
// very call the host gate bounds. It is filled in the background from the
// Store once the Authenticator serves host logins (its Handler is made, or
// a host logs in), so that a restart or a new replica places an owner as
// the Store remembers it, and then from every host login: each right one
// adds its pair, and each read of a host adds the known clients other
// replicas wrote. A program that only administers accounts never scans;
// [Authenticator.Shutdown] ends a scan still under way.
const (
	// knownHostsMax bounds the hosts the set holds: at about 40 bytes a
	// host (internal/knownset), some 40 MB at most.
	knownHostsMax = 1 << 20
	// knownHostsBatch is how many hosts one read of the scan lists, under
	// a store deadline of its own.
	knownHostsBatch = 1000
	// knownHostsTries is how many reads in a row the scan tries before it
	// gives up, a second apart doubling: the set is then filled by logins
	// alone.
	knownHostsTries = 6
)

// startKnownScan starts, once, the scan that fills a.known.
func (a *Authenticator) startKnownScan() {
	a.scan.once.Do(func() { go a.loadKnownHosts(a.scan.ctx) })
}

// loadKnownHosts fills a.known from the Store's hosts, a batch at a time,
// until it has read them all or ctx ends.
func (a *Authenticator) loadKnownHosts(ctx context.Context) {
	err := knownset.Fill(ctx, knownHostsBatch, knownHostsTries, a.guard.ListHosts,
		func(h Host) string { return h.ID },
		func(h Host) { a.rememberKnown(h.ID, h.State.v.PasswordClients) })
	if err != nil {
		a.log.Warn("the host-login gate knows only the hosts that log in from now on: listing the hosts failed", "err", err)
	}
}

// rememberKnown adds the known clients of host id to a.known.
func (a *Authenticator) rememberKnown(id string, clients []state.Client) {
	for _, c := range clients {
		if c.Known {
			a.known.Add(id, c.Client)
		}
	}
}

// knownHost reports whether host id logged in rightly from client, as
// the known set or the cache of machine credentials remembers it.
func (a *Authenticator) knownHost(id, client string) bool {
	return a.known.Has(id, client) || a.cachedKnown(id, client)
}

// newKnownHosts returns the set the host-login gate places logins by.
func newKnownHosts() *knownset.Set { return knownset.New(knownHostsMax) }
