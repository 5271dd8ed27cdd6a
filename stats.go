package nmauth

// Stats is what an [Authenticator] reports of its load, for metrics: the
// password-hash queue, the two caches of the bearer check and the
// per-client limit. Counts only grow; the other fields are gauges.
type Stats struct {
	// PasswordHashesRunning is how many hashing slots the password
	// hashes and verifications running hold now, one for each thread
	// they run, at most the bound [Config.PasswordHashConcurrency] sets.
	PasswordHashesRunning int
	// PasswordHashesWaiting is how many callers wait for a slot now, at
	// most the bound [Config.PasswordHashQueue] sets. A caller refused at the
	// full queue or past [Config.QueueTimeout] gets a [*RetryError] for
	// [ErrOverloaded] and is not counted.
	PasswordHashesWaiting int
	// HostLoginsRunning and HostLoginsWaiting are the same of host
	// logins, under [Config.HostLoginConcurrency] and
	// [Config.HostLoginQueue].
	HostLoginsRunning, HostLoginsWaiting int
	// KnownHosts is how many hosts the host-login gate knows a client
	// address of, which it lets in first from that address: filled from
	// the Store in the background from [New] on, and by each right host
	// login. It grows to the number of hosts that have logged in, at
	// most 1,048,576 (about 40 bytes each).
	KnownHosts int
	// TokenCache is the cache of bearer tokens that verified. A hit spares
	// the token's parse and signature check; every other credential
	// [Authenticator.CheckBearer] is given, the master key included, is a
	// miss.
	TokenCache CacheStats
	// StatusCache is the cache of accounts' standing. A hit answers the
	// bearer check's question whether a user or host is still active
	// without reading the Store; a miss reads the Store.
	StatusCache CacheStats

	// The per-client limit of the login routes ([Authenticator.Limit])
	// watches for two signs of a reverse proxy missing from
	// [Config.TrustedProxies]: behind such a proxy every client has the
	// proxy's address, so they all share one limit. Each sign is also
	// logged as a warning, at most once a minute.

	// ClientAddresses is how many client addresses the limit holds a
	// bucket for now, an estimate; 0 while the limit is off.
	ClientAddresses int
	// ForwardedUntrusted counts the attempts that carried an
	// X-Forwarded-For or Forwarded header from a peer that is not a
	// trusted proxy: a proxy missing from [Config.TrustedProxies], or a
	// client forging its address (the header is ignored).
	ForwardedUntrusted uint64
	// OneAddressMinutes counts the minutes in which one address made more
	// than half of the attempts, and at least 64 of them: an unlisted
	// proxy that sends no forwarding header, or one client hammering the
	// login routes. It stays 0 while the limit is off.
	OneAddressMinutes uint64
}

// CacheStats describes one cache of an [Authenticator]. All its fields
// stay zero while the cache is disabled.
type CacheStats struct {
	// Hits and Misses count the lookups since [New].
	Hits, Misses uint64
	// Size is the number of entries the cache holds, an estimate while
	// entries are being added or expire.
	Size int
}

// Stats returns a snapshot of the Authenticator's password-hash queue,
// caches and per-client limit. It takes no lock and allocates nothing, so
// it may be called on every scrape; under load its fields are read one
// after another rather than at one instant.
func (a *Authenticator) Stats() Stats {
	running, waiting := a.hasher.Gate.Load()
	hostsRunning, hostsWaiting := a.hostGate.Load()
	tokens := a.tokens.stats()
	var statusHits CacheStats
	statusHits.Hits, statusHits.Misses, statusHits.Size = a.status.Counts(tokens.Hits)
	addresses, untrusted, oneAddress := a.clients.Stats()
	return Stats{
		PasswordHashesRunning: running,
		PasswordHashesWaiting: waiting,
		HostLoginsRunning:     hostsRunning,
		HostLoginsWaiting:     hostsWaiting,
		KnownHosts:            a.known.Len(),
		TokenCache:            tokens,
		StatusCache:           statusHits,
		ClientAddresses:       addresses,
		ForwardedUntrusted:    untrusted,
		OneAddressMinutes:     oneAddress,
	}
}

func (c *tokenCache) stats() CacheStats {
	hits, misses, size := c.Stats()
	return CacheStats{Hits: hits, Misses: misses, Size: size}
}
