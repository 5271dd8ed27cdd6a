package nmauth

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"time"

	"github.com/nmauth/nmauth/internal/state"
)

// The attempt limits of password logins (users, hosts and nodes alike).
//
// Failures are counted per client address against each account: from one
// address the first 5 consecutive failures are free, then each further
// attempt waits 1 s doubling up to a minute (see [backoff]). Other addresses are not
// slowed by it, so an attacker hammering an account from one address
// cannot lock its owner out.
//
// Failures from all addresses add up to the account's count. After
// accountCeiling consecutive failures (NIST SP 800-63B allows up to 100),
// each further attempt waits 1 s doubling up to 15 minutes, for every
// address that has never logged in to it. An address
// that has is "known": only its own backoff applies to it.
const (
	clientFreeFailures = 5
	clientMaxDelay     = time.Minute
	accountCeiling     = 100
	accountMaxDelay    = 15 * time.Minute
	// maxClientEntries bounds the addresses kept per account; past it the
	// least recently seen unknown address is forgotten first.
	maxClientEntries = 32
)

// passwordDelay is the backoff of one client address after n consecutive
// failures against one account.
func passwordDelay(n int) time.Duration { return backoff(n, clientFreeFailures, clientMaxDelay) }

// accountDelay is the account-wide backoff after n consecutive failures
// from every address.
func accountDelay(n int) time.Duration { return backoff(n, accountCeiling, accountMaxDelay) }

// backoff is the one backoff formula of password and TOTP attempts: after
// n consecutive failures, none while n is below free, then 1 s doubling
// with each further failure up to ceiling. So free failures can be made
// without waiting, and the attempt after them waits 1 s.
func backoff(n, free int, ceiling time.Duration) time.Duration {
	if n < free {
		return 0
	}
	// 2^30 s is past any ceiling; the bound keeps the shift from
	// overflowing however large n grows.
	return min(time.Second<<min(n-free, 30), ceiling)
}

// addDelay is the end of a backoff of d from now: the zero time when there
// is none.
func addDelay(now time.Time, d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return now.Add(d)
}

// account is what a login reads and writes of a user or a host: pointers
// into the record inside an atomic update.
type account struct {
	user *User // set for a user
	host *Host // set for a host

	hash     *string
	disabled *bool
	failures *int
	blocked  *time.Time
	clients  *[]state.Client
}

func userAccount(u *User) account {
	return account{user: u, hash: &u.PasswordHash, disabled: &u.Disabled,
		failures: &u.State.v.PasswordFailures, blocked: &u.State.v.PasswordBlockedUntil, clients: &u.State.v.PasswordClients}
}

func hostAccount(h *Host) account {
	return account{host: h, hash: &h.PasswordHash, disabled: &h.Disabled,
		failures: &h.State.v.PasswordFailures, blocked: &h.State.v.PasswordBlockedUntil, clients: &h.State.v.PasswordClients}
}

// takeAttempt checks the backoff that applies to client and, if there is
// none, counts the attempt as a failure before its password is checked.
// It returns how long the client must wait, or 0 when the attempt is
// taken.
func takeAttempt(acc account, client string, now time.Time) time.Duration {
	if wait := attemptWait(acc, client, now); wait > 0 {
		return wait
	}
	c := clientEntry(acc.clients, client)
	c.Failures++
	c.BlockedUntil = addDelay(now, passwordDelay(c.Failures))
	*acc.failures++
	if d := accountDelay(*acc.failures); d > 0 {
		*acc.blocked = now.Add(d)
	}
	return 0
}

// attemptWait is how long client must wait before its next attempt at
// the account: its own backoff, and the account's unless the client is
// known to it. It changes nothing.
func attemptWait(acc account, client string, now time.Time) time.Duration {
	var wait time.Duration
	known := false
	if i := slices.IndexFunc(*acc.clients, func(c state.Client) bool { return c.Client == client }); i >= 0 {
		c := (*acc.clients)[i]
		wait, known = c.BlockedUntil.Sub(now), c.Known
	}
	if !known {
		wait = max(wait, acc.blocked.Sub(now))
	}
	return wait
}

// grantChanges reports whether [grantAttempt] would change the account:
// whether it has failures to forget, or client is not yet known to it.
func grantChanges(acc account, client string) bool {
	if *acc.failures != 0 || !acc.blocked.IsZero() {
		return true
	}
	i := slices.IndexFunc(*acc.clients, func(c state.Client) bool { return c.Client == client })
	return i < 0 || (*acc.clients)[i] != state.Client{Client: client, Known: true}
}

// grantAttempt undoes the counting of a login that succeeded and marks
// its client as known to the account.
func grantAttempt(acc account, client string) {
	c := clientEntry(acc.clients, client)
	c.Failures, c.BlockedUntil, c.Known = 0, time.Time{}, true
	*acc.failures, *acc.blocked = 0, time.Time{}
}

// resetAttempts forgets every failure of an account, after an
// administrator set a new password.
func resetAttempts(acc account) {
	*acc.failures, *acc.blocked, *acc.clients = 0, time.Time{}, nil
}

// clientEntry returns client's entry, adding one if needed. Past
// maxClientEntries it forgets the oldest unknown address, or if every
// address is known, the oldest one: an attacker who rotates addresses can
// push out other unknown addresses, never the owner's known ones.
func clientEntry(clients *[]state.Client, client string) *state.Client {
	if i := slices.IndexFunc(*clients, func(c state.Client) bool { return c.Client == client }); i >= 0 {
		return &(*clients)[i]
	}
	if len(*clients) >= maxClientEntries {
		drop := max(slices.IndexFunc(*clients, func(c state.Client) bool { return !c.Known }), 0)
		*clients = slices.Delete(*clients, drop, drop+1)
	}
	*clients = append(*clients, state.Client{Client: client})
	return &(*clients)[len(*clients)-1]
}

type clientAddrKey struct{}

// WithClientAddr returns a copy of ctx naming the client address of a
// login, which [Authenticator.LoginUser], [Authenticator.LoginHost] and
// [Authenticator.LoginNode] count attempts against. The handler sets it
// from the connection (or a trusted proxy's X-Forwarded-For); an
// application calling the login methods itself should set it too, else
// all its logins share one address.
func WithClientAddr(ctx context.Context, addr netip.Addr) context.Context {
	return &clientCtx{Context: ctx, addr: addr}
}

// clientCtx is the context [WithClientAddr] makes: in one allocation, for
// the value under clientAddrKey is a pointer to its own addr.
type clientCtx struct {
	context.Context
	addr netip.Addr
}

func (c *clientCtx) Value(key any) any {
	if key == (clientAddrKey{}) {
		return &c.addr
	}
	return c.Context.Value(key)
}

// clientAddrOf is the client address ctx names, as [WithClientAddr],
// [Authenticator.Limit] or the bearer check put it, and whether it names
// one. The value under clientAddrKey is a *netip.Addr into the context
// that holds it, which nobody changes once the context is made, or a
// netip.Addr.
func clientAddrOf(ctx context.Context) (netip.Addr, bool) {
	switch v := ctx.Value(clientAddrKey{}).(type) {
	case *netip.Addr:
		return *v, true
	case netip.Addr:
		return v, true
	}
	return netip.Addr{}, false
}

// clientKey is the client address of ctx as attempts are counted: an IPv4
// address, or the /64 of an IPv6 address, the block a single host usually
// holds; "" when ctx names none.
func clientKey(ctx context.Context) string {
	addr := clientOfContext(ctx)
	switch {
	case !addr.IsValid():
		return ""
	case addr.Is6():
		return netip.PrefixFrom(addr, 64).String()
	}
	return addr.String()
}

// entrant is the login of t from the client of ctx as the hashing gate
// places it (see admission): its account, and how to learn its class
// should it have to wait. The class is read from the account's stored
// clients, so that "known" belongs to an account and an address
// together, survives a restart and is shared by every replica of the
// Store: one account's right logins make no address known to another,
// and no churn through other accounts forgets an owner's address.
func (a *Authenticator) entrant(ctx context.Context, t loginTarget) entrant {
	if t.absent {
		// No account holds the name: it waits with the names no account has.
		return entrant{Client: clientOfContext(ctx), Class: classNobody, Weight: houseThreads}
	}
	return entrant{
		Client:   clientOfContext(ctx),
		Account:  loginAccount(t),
		Classify: func() int { return a.loginClass(ctx, t) },
		Weight:   houseThreads,
	}
}

// hostEntrant is the login of host t from the client of ctx as the host
// gate places it, client being its [clientKey]: known when the host
// logged in rightly from the client, as the known hosts remember it (see
// knownhosts.go), else new. It reads no Store: a read to place a login
// would be the very call the host gate bounds, outside its bound. So a
// made-up id waits with the new, as a host at an address it never logged
// in from does, and takes no known host's turn. A host login costs no
// hash, so a flood of made-up ids does not fill its queue as it does the
// hashing queue; a host whose credential is a password hash meets the
// hashing gate, with its class read, too.
func (a *Authenticator) hostEntrant(ctx context.Context, t loginTarget, client string) entrant {
	e := entrant{Client: clientOfContext(ctx), Account: loginAccount(t), Class: classNew}
	if a.knownHost(t.name, client) {
		e.Class = classKnown
	}
	return e
}

// loginAccount is the account a login is for, as the gates count it: a
// node's login is its host's.
func loginAccount(t loginTarget) accountKey {
	if t.kind == KindUser {
		return accountKey{kind: KindUser, name: t.name}
	}
	return accountKey{kind: KindHost, name: t.name}
}

// cachedKnown reports whether the cache of machine credentials holds
// host id with client among its known addresses, however old the entry:
// it places a login at a gate, it grants nothing.
func (a *Authenticator) cachedKnown(id, client string) bool {
	r := a.status.peek(accountKey{kind: KindHost, name: id})
	if r == nil {
		return false
	}
	e := r.login.Load()
	return e != nil && slices.Contains(e.clients, client)
}

// loginClass reads t's account to learn the class of its login from the
// client of ctx. A host known from the client (see knownHost) is known
// without a read. A read that fails places the login with the new, so
// that a Store fault never passes for a name that does not exist; the
// login answers the fault itself.
func (a *Authenticator) loginClass(ctx context.Context, t loginTarget) int {
	client := clientKey(ctx)
	var clients []state.Client
	var err error
	if t.read != nil {
		if a.knownHost(t.name, client) {
			return classKnown
		}
		var acc account
		if acc, err = t.read(ctx); err == nil {
			clients = *acc.clients
		}
	} else {
		var u User
		if u, err = a.guard.GetUser(ctx, t.name); err == nil {
			clients = u.State.v.PasswordClients
		}
	}
	switch {
	case errors.Is(err, ErrNotFound):
		return classNobody
	case err != nil:
		return classNew
	case slices.ContainsFunc(clients, func(c state.Client) bool { return c.Known && c.Client == client }):
		return classKnown
	}
	return classNew
}
