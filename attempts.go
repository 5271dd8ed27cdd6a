package nmauth

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"time"

	"github.com/nmauth/nmauth/internal/attempt"
	"github.com/nmauth/nmauth/internal/clientaddr"
	"github.com/nmauth/nmauth/internal/state"
)

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
	// counts is the state that failures, blocked and clients point into,
	// as the rules of internal/attempt read and write it.
	counts *state.Account
}

func userAccount(u *User) account {
	return account{user: u, hash: &u.PasswordHash, disabled: &u.Disabled, counts: &u.State.v.Account,
		failures: &u.State.v.PasswordFailures, blocked: &u.State.v.PasswordBlockedUntil, clients: &u.State.v.PasswordClients}
}

func hostAccount(h *Host) account {
	return account{host: h, hash: &h.PasswordHash, disabled: &h.Disabled, counts: &h.State.v.Account,
		failures: &h.State.v.PasswordFailures, blocked: &h.State.v.PasswordBlockedUntil, clients: &h.State.v.PasswordClients}
}

// WithClientAddr returns a copy of ctx naming the client address of a
// login, which [Authenticator.LoginUser], [Authenticator.LoginHost] and
// [Authenticator.LoginNode] count attempts against. The handler sets it
// from the connection (or a trusted proxy's X-Forwarded-For); an
// application calling the login methods itself should set it too, else
// all its logins share one address.
func WithClientAddr(ctx context.Context, addr netip.Addr) context.Context {
	return clientaddr.NewContext(ctx, addr)
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
		return entrant{Client: clientaddr.Counted(ctx), Class: classNobody, Weight: houseThreads}
	}
	return entrant{
		Client:   clientaddr.Counted(ctx),
		Account:  loginAccount(t),
		Classify: func() int { return a.loginClass(ctx, t) },
		Weight:   houseThreads,
	}
}

// hostEntrant is the login of host t from the client of ctx as the host
// gate places it, client being its key ([clientaddr.Key]): known when the host
// logged in rightly from the client, as the known hosts remember it (see
// knownhosts.go), else new. It reads no Store: a read to place a login
// would be the very call the host gate bounds, outside its bound. So a
// made-up id waits with the new, as a host at an address it never logged
// in from does, and takes no known host's turn. A host login costs no
// hash, so a flood of made-up ids does not fill its queue as it does the
// hashing queue; a host whose credential is a password hash meets the
// hashing gate, with its class read, too.
func (a *Authenticator) hostEntrant(ctx context.Context, t loginTarget, client string) entrant {
	e := entrant{Client: clientaddr.Counted(ctx), Account: loginAccount(t), Class: classNew}
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
	r := a.status.Peek(accountKey{kind: KindHost, name: id})
	if r == nil {
		return false
	}
	e := r.Login.Load()
	return e != nil && slices.Contains(e.clients, client)
}

// loginClass reads t's account to learn the class of its login from the
// client of ctx. A host known from the client (see knownHost) is known
// without a read. A read that fails places the login with the new, so
// that a Store fault never passes for a name that does not exist; the
// login answers the fault itself.
func (a *Authenticator) loginClass(ctx context.Context, t loginTarget) int {
	client := clientaddr.Key(clientaddr.Counted(ctx))
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
	case attempt.Known(clients, client):
		return classKnown
	}
	return classNew
}
