package nmauth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nmauth/nmauth/internal/attempt"
	"github.com/nmauth/nmauth/internal/clientaddr"
	"github.com/nmauth/nmauth/internal/hashfmt"
	"github.com/nmauth/nmauth/internal/names"
	"github.com/nmauth/nmauth/internal/secret"
)

// loginMachine is the login of a host whose stored credential is a
// machine-secret digest; handled is false for any other, which takes
// [Authenticator.login], with what this read and identified of the
// credential in *read. A login granted from the cache of machine
// credentials (see hostCredential) reads no Store and takes no turn at
// the host gate: it costs a digest and a signature. Any other takes a
// turn, and a deadline of StoreTimeout from when the turn comes; a host
// with a password hash leaves the gate before it waits for a hashing
// slot, so that password logins never hold up machine secrets. A clean
// success costs one read, one digest and one signature, and writes
// nothing: the token carries the generation read, so a revocation or a
// new secret that moves it on refuses the token as it refuses every
// older one. A write happens only when something changes: failures to
// reset, a client address not yet known to the host, a digest under a
// root secret other than the first; with a [HostBatchStore] it waits for
// the next batch (see [Authenticator.grantMachine]).
//
// Unlike a password, a machine secret's attempt is counted after the
// check, and only when it fails: guessing a 128-bit secret is hopeless
// however many guesses slip through at once, and a guess still gets no
// verdict unless its failure is recorded, so a Store that cannot record
// answers a wrong secret 503, never 401. docs/security.md
// says why this keeps every guarantee of the count before the check.
func (a *Authenticator) loginMachine(parent context.Context, t loginTarget, pw secret.Presented, read *credential,
	admit func(ctx context.Context) error, grant func(acc account, now time.Time) error) (handled bool, err error) {
	client := clientaddr.Key(clientaddr.Counted(parent))
	// Only a right secret is answered from the cache; any other login
	// reads the Store as if it were not there.
	cached := a.cachedHost(t.name, client, a.now())
	ctx, inTurn := parent, false
	for changes := 0; changes <= maxHashChanges; {
		var acc account
		var c credential
		var cache hostCacheState
		if cached != nil {
			acc, c = cached.account(t.name, client), cached.credential()
		} else {
			if !inTurn && !t.absent {
				var leave func()
				if ctx, leave, err = a.hostTurn(parent, t, client); err != nil {
					return true, err
				}
				defer leave()
				inTurn = true
			}
			cache = a.hostCacheBefore(t.name)
			acc, err = t.read(ctx)
			if err == nil {
				c = a.identify(*acc.hash)
				*read = c
				// What other replicas made known places this one's logins too.
				a.rememberKnown(t.name, *acc.clients)
			}
			if err != nil || c.format != hashfmt.MachineDigest {
				a.dropHost(t.name, false)
			}
			switch {
			case errors.Is(err, ErrNotFound) && pw.Machine:
				// The check below costs what a right secret's does.
			case errors.Is(err, ErrNotFound):
				return false, nil // login spends an argon2id run
			case err != nil:
				return true, err
			case c.format != hashfmt.MachineDigest:
				return false, nil
			}
			if wait := attempt.Wait(acc.counts, client, a.now()); c.found && wait > 0 {
				a.emit(ctx, Event{Type: EventLoginThrottled, Kind: t.kind, Name: t.name})
				return true, &RetryError{Reason: ErrThrottled, RetryAfter: wait}
			}
		}
		ok, next, err := a.verify(ctx, t, c, pw, c.found && !*acc.disabled, nil)
		switch {
		case err != nil:
			return true, err
		case !c.found:
			// The store work of a wrong secret's count (countFailure): an
			// update, which a SQLStore commits for a missing record too,
			// so that the answer's time does not tell which ids are held,
			// and a store that cannot count refuses both alike.
			if err := t.update(ctx, func(account) error { return nil }); err != nil && !errors.Is(err, ErrNotFound) {
				return true, err
			}
			a.emit(ctx, Event{Type: EventLoginFailed, Kind: t.kind, Name: t.name})
			return true, t.unknown
		case cached != nil && ok:
			// Such a grant writes nothing, and its one call out, admit (a
			// hook that the Store guard runs under StoreTimeout of its own),
			// needs no deadline from here: the login arms no timer. The
			// host is known from client already: the read that made the
			// entry added the host's known clients.
			_, err := a.grantMachine(parent, t, acc, "", client, nil, admit, grant)
			return true, err
		case cached != nil:
			cached = nil
			continue
		}
		if ok && !*acc.disabled {
			// A read with nothing to write is cached as read; one with a
			// write replaces what the cache held with the host as the
			// queued write leaves it (seeded), or else drops it.
			clean := next == "" && !attempt.GrantChanges(acc.counts, client)
			var seeded bool
			seeded, err = a.grantMachine(ctx, t, acc, next, client, &cache, admit, grant)
			switch {
			case clean && err == nil:
				a.keepHost(cache, t.name, acc)
			case !clean && !seeded:
				a.dropHost(t.name, false)
			}
			if err == nil {
				// The host's next logins from client wait with the known
				// at the host gate.
				a.known.Add(t.name, client)
			}
		} else {
			err = a.countFailure(ctx, t, c.stored, client)
			// A failure counted, or a disabled host, is seen by the next
			// login at once; so is a Store that could not count.
			a.dropHost(t.name, true)
		}
		if !errors.Is(err, errHashChanged) {
			return true, err
		}
		changes++
	}
	return true, errHashChangedTooOften
}

// hostTurn waits for a host login's turn at the host gate, and gives it
// a deadline of StoreTimeout from when the turn comes; leave ends both.
func (a *Authenticator) hostTurn(parent context.Context, t loginTarget, client string) (ctx context.Context, leave func(), err error) {
	if err := a.hostGate.Acquire(parent, a.hostEntrant(parent, t, client)); err != nil {
		return parent, nil, err
	}
	ctx, cancel := context.WithTimeout(parent, a.cfg.StoreTimeout)
	return ctx, func() { cancel(); a.hostGate.Release(1) }, nil
}

// grantMachine grants the login of a right machine secret, minting its
// token from the record read: without a write when it changes nothing,
// else with a write queued for the next batch (see [HostBatchStore]), or
// through [Authenticator.grantLogin] when the Store does not batch or the
// queue is full. Nothing was counted, so a refusal by admit or by grant
// (a MAC address the host may not use) has nothing to undo. next is what
// the check said the host's credential is stored as from now on, "" to
// keep it.
//
// With cache, what the cache held before the read, a queued write first
// puts in the cache the host as the write leaves it (see seedHost), unless
// the Store is failing to take writes; seeded reports whether the cache
// holds it once the login is granted. A write made by the login itself
// keeps it only if made.
func (a *Authenticator) grantMachine(ctx context.Context, t loginTarget, acc account, next string,
	client string, cache *hostCacheState, admit func(ctx context.Context) error, grant func(acc account, now time.Time) error) (seeded bool, err error) {
	if admit != nil {
		if err := admit(ctx); err != nil {
			return false, err
		}
	}
	write := next != "" || attempt.GrantChanges(acc.counts, client)
	if write {
		if a.writes == nil {
			_, err := a.grantLogin(ctx, t, *acc.hash, next, client, grant)
			return false, err
		}
	}
	if err := grant(acc, a.now()); err != nil {
		return false, err
	}
	// The token carries the generation read, so the write can wait for
	// the next batch: a disable or a new secret meanwhile moves the
	// generation on and refuses the token, and the write, which applies
	// only to the digest checked on a host not disabled, undoes neither.
	// A full queue makes the write now, with the token minted in it.
	// The host is seeded before the write is queued, so that the writer,
	// which drops the host's entry when the write does not apply as read,
	// comes after it.
	if write {
		w := newHostWrite(t.name, acc, next, client)
		seeded = cache != nil && !a.writes.failing.Load() && a.seedHost(*cache, t.name, acc, &w)
		if !a.writes.enqueue(w) {
			_, err := a.grantLogin(ctx, t, *acc.hash, next, client, grant)
			return seeded && err == nil, err
		}
	}
	a.emit(ctx, Event{Type: t.grantedEvent(), Kind: t.kind, Name: t.name})
	return seeded, nil
}

// HostLogin is the result of a host login, or of a node login: a node
// token for one network, named in Network ("" for a host token).
type HostLogin struct {
	AuthToken string `json:"authToken"`
	ID        string `json:"id"`
	Network   string `json:"network,omitempty"`
}

// LoginHost checks a host's id and password, applies the MAC address
// policy (see [Config.RefuseMACChange]) and returns a host token. An
// unknown host id returns [ErrUnknownHost], which matches
// [ErrInvalidCredentials], after the same work as a wrong password.
// Attempts are counted as [Authenticator.LoginUser] counts them.
func (a *Authenticator) LoginHost(ctx context.Context, id, mac, password string) (HostLogin, error) {
	tok, id, err := a.loginHost(ctx, id, mac, password, KindHost, func(id string) mintArgs {
		return mintArgs{kind: kindHost, subject: id, ttl: a.cfg.HostTokenTTL}
	}, nil)
	if err != nil {
		return HostLogin{}, err
	}
	return HostLogin{AuthToken: tok, ID: id}, nil
}

// LoginNode checks a host's credentials as [Authenticator.LoginHost] does
// and returns a node token for network, whose subject is the host id. The
// host must be a member of network by [Config.NodeMember], asked only once
// the credentials are right; a host that is not answers [ErrForbidden],
// and so does every host when NodeMember is nil. The token dies with the
// host's tokens (disable, delete, revoke).
func (a *Authenticator) LoginNode(ctx context.Context, network, id, mac, password string) (HostLogin, error) {
	if !names.Network(network) {
		return HostLogin{}, ErrInvalidNetwork
	}
	admit := func(ctx context.Context, id string) error {
		if a.cfg.NodeMember == nil {
			return ErrForbidden
		}
		ok, err := a.guard.g.Ask(ctx, "node membership", func(ctx context.Context) (bool, error) { return a.cfg.NodeMember(ctx, network, id) })
		if err != nil {
			return err
		}
		if !ok {
			return ErrForbidden
		}
		return nil
	}
	tok, id, err := a.loginHost(ctx, id, mac, password, KindNode, func(id string) mintArgs {
		return mintArgs{kind: kindNode, subject: id, network: network, ttl: a.cfg.NodeTokenTTL}
	}, admit)
	if err != nil {
		return HostLogin{}, err
	}
	return HostLogin{AuthToken: tok, ID: id, Network: network}, nil
}

// loginHost runs the login path for a host: it checks the credentials,
// asks admit (when set) whether the login may go on, applies the MAC
// policy and mints the token that token describes. kind is what the audit
// events name.
func (a *Authenticator) loginHost(ctx context.Context, id, mac, password string, kind PrincipalKind,
	token func(id string) mintArgs, admit func(ctx context.Context, id string) error) (string, string, error) {
	a.startKnownScan()
	id, idErr := PrepareHostID(id)
	mac, macErr := prepareMAC(mac)
	if macErr != nil {
		return "", "", macErr
	}
	pw, pwErr := secret.Prepare(password, true)
	t := loginTarget{kind: kind, name: id, unknown: ErrUnknownHost, update: func(ctx context.Context, fn func(account) error) error {
		return a.store.UpdateHost(ctx, id, func(h *Host) error { return fn(hostAccount(h)) })
	}, read: func(ctx context.Context) (account, error) {
		h, err := a.guard.getHostLogin(ctx, id)
		return hostAccount(&h), err
	}}
	if idErr != nil || pwErr != nil {
		t.nobody()
	}
	var admitHost func(context.Context) error
	if admit != nil {
		admitHost = func(ctx context.Context) error { return admit(ctx, id) }
	}
	var tok, registered string
	grant := func(acc account, iat time.Time) error {
		h := acc.host
		registered = h.MACAddress
		if a.cfg.RefuseMACChange && h.MACAddress != "" && mac != h.MACAddress {
			return fmt.Errorf("%w: MAC address %q is not the host's", ErrForbidden, mac)
		}
		args := token(id)
		args.issuedAt, args.generation, args.mac = iat, &h.State.v.Generation, mac
		var err error
		tok, _, err = a.minter.mint(args)
		return err
	}
	var read credential
	handled, err := a.loginMachine(ctx, t, pw, &read, admitHost, grant)
	if !handled {
		err = a.login(ctx, t, pw, read, admitHost, grant)
	}
	if errors.Is(err, ErrForbidden) && registered != "" {
		a.emit(ctx, Event{Type: EventHostMACRefused, Kind: kind, Name: id})
	}
	if err != nil {
		return "", "", err
	}
	if registered != "" && mac != "" && mac != registered {
		a.emit(ctx, Event{Type: EventHostMACChanged, Kind: kind, Name: id})
	}
	if pw.Machine {
		// A machine secret costs a digest, no hash: its attempt is given
		// back every time, so that a fleet's back-to-back logins are not
		// slowed, and a flood of them takes no hashing turn.
		markProved(ctx)
	} else {
		markProvedAccount(ctx, accountKey{kind: KindHost, name: id})
	}
	return tok, id, nil
}

// IssueNodeToken mints a node token for the application's own node
// authentication route, after the application has checked the node. The
// network and the node id take the form of a host id (1 to 128 printable
// characters without spaces), else [ErrInvalidNetwork] or [ErrInvalidHost];
// the node id is prepared as a host id is ([PrepareHostID]), so that a
// UUID names the same node in every spelling. ctx is
// the request's, as for every other method: once it is done, no token is
// minted and its error is returned. Under [Authenticator.Limit], the
// request whose context it is given gets its attempt back.
func (a *Authenticator) IssueNodeToken(ctx context.Context, network, nodeID string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if !names.Network(network) {
		return "", ErrInvalidNetwork
	}
	nodeID, err := PrepareHostID(nodeID)
	if err != nil {
		return "", err
	}
	tok, _, err := a.minter.mint(mintArgs{kind: kindNode, subject: nodeID, network: network, issuedAt: a.now(), ttl: a.cfg.NodeTokenTTL})
	if err != nil {
		return "", err
	}
	markProved(ctx)
	return tok, nil
}
