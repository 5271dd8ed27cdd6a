package nmauth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nmauth/nmauth/internal/attempt"
	"github.com/nmauth/nmauth/internal/clientaddr"
	"github.com/nmauth/nmauth/internal/names"
	"github.com/nmauth/nmauth/internal/secret"
)

// loginTarget is the account a login is for: a user or a host, reached
// through the Store's atomic update of its kind.
type loginTarget struct {
	kind   PrincipalKind
	name   string
	update func(ctx context.Context, fn func(account) error) error
	// read reads the account once, without a lock. It is set for hosts,
	// whose secret may be a machine secret, and nil for users, whose
	// passwords never are.
	read func(ctx context.Context) (account, error)
	// unknown is the error for an account the Store does not hold.
	unknown error
	// absent is set for a name no account can hold (see nobody).
	absent bool
	// granted, when set, is the event of a granted login, which grant
	// sets: a user's password that earned a pre-auth token is
	// [EventLoginSecondFactorRequired]. Otherwise it is
	// [EventLoginSucceeded].
	granted *EventType
}

// grantedEvent is the event of t's granted login.
func (t loginTarget) grantedEvent() EventType {
	if t.granted != nil && *t.granted != "" {
		return *t.granted
	}
	return EventLoginSucceeded
}

// nobody makes t the target of a login that no account can answer: its
// name, or the secret, could not be prepared. Its reads and updates find
// no account without asking the Store, so that the login does the work of
// an unknown account's; its events name the name bounded (names.Safe).
func (t *loginTarget) nobody() {
	t.absent, t.name = true, names.Safe(t.name)
	t.update = func(context.Context, func(account) error) error { return ErrNotFound }
	if t.read != nil {
		t.read = func(context.Context) (account, error) { return hostAccount(&Host{}), ErrNotFound }
	}
}

// errHashChanged stops a grant whose account got another password hash
// while the password was being checked.
var errHashChanged = errors.New("nmauth: password hash changed during login")

// maxHashChanges bounds how often a login checks the password again
// against a hash that changed under it.
const maxHashChanges = 2

// errHashChangedTooOften answers a login whose account's secret kept
// changing under it: a fault of the moment, not a wrong password.
var errHashChangedTooOften = fmt.Errorf("%w: the password changed during the login", ErrStoreUnavailable)

// login is the one login path of users, hosts and nodes but a host whose
// stored credential is a machine-secret digest, which takes
// [Authenticator.loginMachine] instead; read is what that read and
// identified of the host's credential, the zero credential for a user. In
// order:
//
//  1. a hashing slot is taken, the slots of the house argon2id's threads,
//     so that an overload refuses the attempt before anything is counted;
//  2. one atomic update checks the client's and the account's backoff and
//     counts the attempt as a failure, so that concurrent guesses are all
//     counted and a Store that cannot record refuses right and wrong
//     passwords alike;
//  3. the password is checked against the hash that update read, once
//     the login holds a slot for each thread the check runs: a stored
//     argon2 hash of more lanes than the house's waits for the others
//     first (see [hasher.Hasher.Grow]), and may then still be refused
//     503, its attempt counted, as a rare hash of another system's can;
//  4. admit, when set, decides whether a right password may go on; its
//     refusal undoes the counting, since the password was right;
//  5. a second atomic update ([Authenticator.grantLogin]) grants the
//     login only if the hash is still the one checked and the account is
//     not disabled: it resets the counters and calls grant, which mints
//     the token with the generation read in that same update. A token is
//     thus never minted for a password that a concurrent change replaced,
//     nor under a generation that a concurrent revocation moved past.
//
// An account that does not exist spends the same argon2id run, and so
// does a name that no account can hold (see loginTarget.nobody). grant
// gets the time to put in the token.
func (a *Authenticator) login(ctx context.Context, t loginTarget, pw secret.Presented, read credential,
	admit func(ctx context.Context) error, grant func(acc account, now time.Time) error) error {
	// The login waits for its turn first; its deadline, for its Store
	// calls and hooks, starts once it has one, so that a login that waited
	// behind a burst still has the whole of StoreTimeout. The queue's own
	// bound, QueueTimeout, bounds the wait.
	parent := ctx
	if err := a.hasher.Gate.Acquire(parent, a.entrant(parent, t)); err != nil {
		return err
	}
	held := houseThreads
	defer func() { a.hasher.Release(held) }()
	ctx, cancel := context.WithTimeout(parent, a.cfg.StoreTimeout)
	defer cancel()
	client := clientaddr.Key(clientaddr.Counted(ctx))
	now := a.now()
	var hash string
	var disabled bool
	err := t.update(ctx, func(acc account) error {
		if wait := attempt.Take(acc.counts, client, now); wait > 0 {
			return &RetryError{Reason: ErrThrottled, RetryAfter: wait}
		}
		hash, disabled = *acc.hash, *acc.disabled
		return nil
	})
	found := !errors.Is(err, ErrNotFound)
	switch {
	case errors.Is(err, ErrThrottled):
		a.emit(ctx, Event{Type: EventLoginThrottled, Kind: t.kind, Name: t.name})
		return err
	case err != nil && found:
		return err
	}
	deadline, _ := ctx.Deadline()
	for changes := 0; ; changes++ {
		left := time.Until(deadline)
		hashed := time.Now()
		var c credential
		if found {
			c = a.identified(read, hash)
		}
		ok, next, err := a.verify(parent, t, c, pw, !disabled, &held)
		switch {
		case err != nil:
			return err
		case !found:
			a.emit(ctx, Event{Type: EventLoginFailed, Kind: t.kind, Name: t.name})
			return t.unknown
		}
		// A disabled account answers as a wrong password does, before
		// admit can tell a right one apart by refusing it otherwise.
		if !ok || disabled {
			a.emit(ctx, Event{Type: EventLoginFailed, Kind: t.kind, Name: t.name})
			return ErrInvalidCredentials
		}
		// The hash's own time, and its wait for the slots of its
		// threads, do not count against the deadline.
		deadline = deadline.Add(time.Since(hashed))
		current, err := a.admitAndGrant(parent, left, t, hash, next, client, admit, grant)
		switch {
		case errors.Is(err, errHashChanged) && changes < maxHashChanges:
			hash = current
			continue
		case errors.Is(err, errHashChanged):
			return errHashChangedTooOften
		case err == nil && t.read != nil:
			// The host's next logins from client wait with the known at
			// the host gate.
			a.known.Add(t.name, client)
		}
		return err
	}
}

// admitAndGrant runs the steps of a login after its password's hash,
// admit and grantLogin, in the time left of the login's deadline. A right
// password that admit or grant refuses (a MAC address change the host may
// not make, say) is no failure either.
func (a *Authenticator) admitAndGrant(parent context.Context, left time.Duration, t loginTarget, hash, credential, client string,
	admit func(ctx context.Context) error, grant func(acc account, now time.Time) error) (string, error) {
	ctx, cancel := context.WithTimeout(parent, left)
	defer cancel()
	if admit != nil {
		if err := admit(ctx); err != nil {
			return "", a.refuseRightPassword(ctx, t, hash, client, err)
		}
	}
	current, err := a.grantLogin(ctx, t, hash, credential, client, grant)
	if errors.Is(err, ErrForbidden) {
		return "", a.refuseRightPassword(ctx, t, hash, client, err)
	}
	return current, err
}

// grantLogin grants a login in one atomic update, if the account's stored
// credential is still the one checked (else errHashChanged, with the
// current one) and the account is not disabled: it marks the client
// known, resets the counters, stores newCredential when set, and calls
// grant. It emits the login's outcome, but for errHashChanged and for
// grant's refusal of a right secret ([ErrForbidden]). The client marked
// known is what places the account's next logins from it first at the
// gates (see Authenticator.entrant).
func (a *Authenticator) grantLogin(ctx context.Context, t loginTarget, checked, newCredential, client string,
	grant func(acc account, now time.Time) error) (current string, err error) {
	err = t.update(ctx, func(acc account) error {
		if *acc.hash != checked {
			current = *acc.hash
			return errHashChanged
		}
		if *acc.disabled {
			return ErrInvalidCredentials
		}
		attempt.Grant(acc.counts, client)
		if newCredential != "" {
			*acc.hash = newCredential
		}
		return grant(acc, a.now())
	})
	switch {
	case errors.Is(err, errHashChanged), errors.Is(err, ErrForbidden):
		return current, err
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrInvalidCredentials):
		a.emit(ctx, Event{Type: EventLoginFailed, Kind: t.kind, Name: t.name})
		return "", ErrInvalidCredentials
	case err != nil:
		return "", err
	}
	a.emit(ctx, Event{Type: t.grantedEvent(), Kind: t.kind, Name: t.name})
	return "", nil
}

// countFailure counts a machine secret that did not pass (wrong, or right
// for a disabled host) in one atomic update, which checks the backoff
// again, and answers it: [ErrInvalidCredentials] once counted; the
// Store's error, never a verdict, when it could not count; errHashChanged
// when the secret changed since it was checked.
func (a *Authenticator) countFailure(ctx context.Context, t loginTarget, checked, client string) error {
	now := a.now()
	err := t.update(ctx, func(acc account) error {
		if *acc.hash != checked {
			return errHashChanged
		}
		if wait := attempt.Take(acc.counts, client, now); wait > 0 {
			return &RetryError{Reason: ErrThrottled, RetryAfter: wait}
		}
		return nil
	})
	switch {
	case errors.Is(err, ErrThrottled):
		a.emit(ctx, Event{Type: EventLoginThrottled, Kind: t.kind, Name: t.name})
		return err
	case err == nil, errors.Is(err, ErrNotFound):
		a.emit(ctx, Event{Type: EventLoginFailed, Kind: t.kind, Name: t.name})
		return ErrInvalidCredentials
	}
	return err
}

// refuseRightPassword answers a refusal of a right password, by admit or by
// grant. A right password is never a failure: the attempt counted before
// the check is undone, if the hash is still the one checked, so that a
// host asking for a network it is not a member of, or coming from a MAC
// address it may not use, is not throttled out of its own logins.
func (a *Authenticator) refuseRightPassword(ctx context.Context, t loginTarget, hash, client string, refusal error) error {
	err := t.update(ctx, func(acc account) error {
		if *acc.hash == hash {
			attempt.Grant(acc.counts, client)
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return refusal
}
