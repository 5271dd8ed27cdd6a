package nmauth

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/nmauth/nmauth/internal/attempt"
	"github.com/nmauth/nmauth/internal/hashfmt"
	"github.com/nmauth/nmauth/internal/secret"
	"github.com/nmauth/nmauth/internal/state"
	"github.com/nmauth/nmauth/internal/walk"
)

// Admin administers the users and hosts of an [Authenticator]: it creates,
// changes, lists, imports, revokes and deletes them, and repairs and
// reseals their records. Get it with [Authenticator.Admin]. It checks no
// credential: the application calls it for a caller it has admitted (the
// master key, an administrator). Each change emits an audit event whose
// actor is the one the context of the call names: the request's bearer
// behind [Authenticator.Middleware], else the one [WithActor] names.
type Admin struct {
	a *Authenticator
}

// Admin returns the administration of a's users and hosts.
func (a *Authenticator) Admin() *Admin { return &Admin{a: a} }

// CreateUser adds a user with a password that meets the policy: 8 to 1024
// bytes after PRECIS OpaqueString preparation.
func (ad *Admin) CreateUser(ctx context.Context, username, password string) error {
	a := ad.a
	name, err := PrepareUsername(username)
	if err != nil {
		return err
	}
	hash, err := a.newPasswordHash(ctx, password)
	if err != nil {
		return err
	}
	gen, err := a.firstGeneration()
	if err != nil {
		return err
	}
	defer a.forget(KindUser, name)
	err = a.store.CreateUser(ctx, User{Name: name, PasswordHash: hash, CreatedAt: a.now(), State: State{v: state.User{Account: state.Account{Generation: gen}}}})
	a.audit(ctx, err, EventUserCreated, KindUser, name)
	return err
}

// firstGeneration is the generation of a new account: random, so that the
// tokens of a deleted account of the same name (or of one made by another
// replica) match the new one with odds of 2^-64.
func (a *Authenticator) firstGeneration() (uint64, error) {
	var b [8]byte
	if _, err := io.ReadFull(a.cfg.Rand, b[:]); err != nil {
		return 0, fmt.Errorf("nmauth: account generation: %w", err)
	}
	return binary.BigEndian.Uint64(b[:]), nil
}

// SetUserPassword replaces a user's password and revokes the user's
// tokens.
func (ad *Admin) SetUserPassword(ctx context.Context, username, password string) error {
	a := ad.a
	hash, err := a.newPasswordHash(ctx, password)
	if err != nil {
		return err
	}
	return a.updateUser(ctx, username, EventUserPasswordSet, func(u *User) {
		u.PasswordHash = hash
		attempt.Reset(&u.State.v.Account)
	})
}

// DisableUser refuses the user's logins and revokes the user's tokens.
func (ad *Admin) DisableUser(ctx context.Context, username string) error {
	a := ad.a
	return a.updateUser(ctx, username, EventUserDisabled, func(u *User) { u.Disabled = true })
}

// EnableUser lets a disabled user log in again. Tokens revoked by the
// disable stay revoked: enabling leaves the generation where the disable
// moved it, so it revokes nothing and emits [EventUserEnabled] alone.
func (ad *Admin) EnableUser(ctx context.Context, username string) error {
	a := ad.a
	name, err := PrepareUsername(username)
	if err != nil {
		return err
	}
	defer a.forget(KindUser, name)
	err = a.store.UpdateUser(ctx, name, func(u *User) error { u.Disabled = false; return nil })
	a.audit(ctx, err, EventUserEnabled, KindUser, name)
	return err
}

// ResetTOTP turns TOTP off for a user, drops the recovery codes and
// revokes the user's tokens, so the user can enroll again after logging in
// with the password alone.
func (ad *Admin) ResetTOTP(ctx context.Context, username string) error {
	a := ad.a
	return a.updateUser(ctx, username, EventTOTPReset, func(u *User) {
		u.TOTPSecret, u.RecoveryCodes = nil, nil
		attempt.ClearSecondFactor(&u.State.v)
	})
}

// RevokeUserTokens makes every token the user holds stop working.
func (ad *Admin) RevokeUserTokens(ctx context.Context, username string) error {
	a := ad.a
	return a.updateUser(ctx, username, "", func(*User) {})
}

// DeleteUser removes a user; the user's tokens stop working.
func (ad *Admin) DeleteUser(ctx context.Context, username string) error {
	a := ad.a
	name, err := PrepareUsername(username)
	if err != nil {
		return err
	}
	defer a.forget(KindUser, name)
	if err := a.store.DeleteUser(ctx, name); err != nil {
		return err
	}
	a.audit(ctx, nil, EventUserDeleted, KindUser, name)
	// The user's access tokens died with it (a user made again under the
	// name starts at another generation); their records go too.
	return a.deleteUserAccessTokens(ctx, name)
}

// updateUser applies change and revokes the user's tokens, moving the
// generation on, in one atomic update, and emits event (unless "") and
// [EventTokensRevoked].
func (a *Authenticator) updateUser(ctx context.Context, username string, event EventType, change func(*User)) error {
	name, err := PrepareUsername(username)
	if err != nil {
		return err
	}
	defer a.forget(KindUser, name)
	err = a.store.UpdateUser(ctx, name, func(u *User) error {
		change(u)
		u.State.v.Generation++
		return nil
	})
	a.audit(ctx, err, event, KindUser, name)
	a.audit(ctx, err, EventTokensRevoked, KindUser, name)
	return err
}

// newPasswordHash checks a new password against the policy and hashes it.
func (a *Authenticator) newPasswordHash(ctx context.Context, password string) (string, error) {
	pw, err := checkPasswordPolicy(password)
	if err != nil {
		return "", err
	}
	return a.hasher.Hash(ctx, pw)
}

// newHostCredential checks a host's new password against the policy of
// users' and returns what is stored of it: the digest of a machine secret
// (see credential.go) when it qualifies as one, else an argon2id hash.
func (a *Authenticator) newHostCredential(ctx context.Context, id, password string) (string, error) {
	pw, err := checkPasswordPolicy(password)
	if err != nil {
		return "", err
	}
	if secret.IsMachine(pw) {
		return a.ring.DigestMachineSecret(id, pw), nil
	}
	return a.hasher.Hash(ctx, pw)
}

// CreateHost adds a host with a password under the same policy as users'.
// A password that a program drew at random, 128 bits or more (see the
// security model in docs/security.md), is kept as a keyed digest, which a login
// checks in microseconds; any other as a user's is. mac may be empty; when
// set, it is the host's registered MAC address (see
// [Config.RefuseMACChange]).
func (ad *Admin) CreateHost(ctx context.Context, id, mac, password string) error {
	a := ad.a
	id, err := PrepareHostID(id)
	if err != nil {
		return err
	}
	if mac, err = prepareMAC(mac); err != nil {
		return err
	}
	hash, err := a.newHostCredential(ctx, id, password)
	if err != nil {
		return err
	}
	gen, err := a.firstGeneration()
	if err != nil {
		return err
	}
	defer a.forget(KindHost, id)
	err = a.store.CreateHost(ctx, Host{ID: id, MACAddress: mac, PasswordHash: hash, CreatedAt: a.now(), State: State{v: state.User{Account: state.Account{Generation: gen}}}})
	a.audit(ctx, err, EventHostCreated, KindHost, id)
	return err
}

// DisableHost refuses the host's logins and revokes its tokens.
func (ad *Admin) DisableHost(ctx context.Context, id string) error {
	a := ad.a
	return a.updateHost(ctx, id, EventHostDisabled, func(h *Host) { h.Disabled = true })
}

// EnableHost lets a disabled host log in again. Tokens revoked by the
// disable stay revoked, as [Admin.EnableUser] keeps them.
func (ad *Admin) EnableHost(ctx context.Context, id string) error {
	a := ad.a
	id, err := PrepareHostID(id)
	if err != nil {
		return err
	}
	defer a.forget(KindHost, id)
	err = a.store.UpdateHost(ctx, id, func(h *Host) error { h.Disabled = false; return nil })
	a.audit(ctx, err, EventHostEnabled, KindHost, id)
	return err
}

// SetHostPassword replaces a host's password, stored as [Admin.CreateHost]
// stores it, and revokes its tokens.
func (ad *Admin) SetHostPassword(ctx context.Context, id, password string) error {
	a := ad.a
	id, err := PrepareHostID(id)
	if err != nil {
		return err
	}
	hash, err := a.newHostCredential(ctx, id, password)
	if err != nil {
		return err
	}
	return a.updateHost(ctx, id, EventHostPasswordSet, func(h *Host) {
		h.PasswordHash = hash
		attempt.Reset(&h.State.v.Account)
	})
}

// RevokeHostTokens makes every token the host holds stop working, and
// the node tokens it got from [Authenticator.LoginNode] with them.
func (ad *Admin) RevokeHostTokens(ctx context.Context, id string) error {
	a := ad.a
	return a.updateHost(ctx, id, "", func(*Host) {})
}

// updateHost applies change and revokes the host's tokens, moving the
// generation on, in one atomic update, and emits event (unless "") and
// [EventTokensRevoked].
func (a *Authenticator) updateHost(ctx context.Context, id string, event EventType, change func(*Host)) error {
	id, err := PrepareHostID(id)
	if err != nil {
		return err
	}
	defer a.forget(KindHost, id)
	err = a.store.UpdateHost(ctx, id, func(h *Host) error {
		change(h)
		h.State.v.Generation++
		return nil
	})
	a.audit(ctx, err, event, KindHost, id)
	a.audit(ctx, err, EventTokensRevoked, KindHost, id)
	return err
}

// DeleteHost removes a host; its tokens stop working.
func (ad *Admin) DeleteHost(ctx context.Context, id string) error {
	a := ad.a
	id, err := PrepareHostID(id)
	if err != nil {
		return err
	}
	defer a.forget(KindHost, id)
	err = a.store.DeleteHost(ctx, id)
	a.audit(ctx, err, EventHostDeleted, KindHost, id)
	return err
}

// RecoveryCodesLeft reports how many unused recovery codes a user has.
func (ad *Admin) RecoveryCodesLeft(ctx context.Context, username string) (int, error) {
	a := ad.a
	name, err := PrepareUsername(username)
	if err != nil {
		return 0, err
	}
	u, err := a.store.GetUser(ctx, name)
	if errors.Is(err, ErrNotFound) {
		return 0, err
	}
	return len(u.RecoveryCodes), err
}

// ResealTOTPSecrets seals every stored TOTP secret again under the first
// root secret, so that older root secrets can be dropped from
// [Config.Secrets]. It returns how many secrets it sealed again; secrets
// already under the first key are left alone. Each user is updated
// atomically, so it is safe while the service runs.
//
// A broken record (see [Store]) does not stop the others: its secret is
// left as it is and the error, which matches [ErrBrokenRecord], names it
// once every other secret is resealed.
func (ad *Admin) ResealTOTPSecrets(ctx context.Context) (int, error) {
	a := ad.a
	n := 0
	var broken []error
	err := walk.All(ctx, scanPage, a.store.ListUsers, func(u User) string { return u.Name }, func(listed User) error {
		sealed, err := a.reseal(ctx, listed)
		switch {
		case errors.Is(err, ErrBrokenRecord):
			broken = append(broken, err)
		case err != nil:
			return err
		case sealed:
			n++
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	return n, errors.Join(broken...)
}

// HostsUnderOlderSecrets counts the hosts whose machine secret is kept as
// a digest under a root secret other than the first. Such a digest cannot
// be moved without the secret it digests, which only the host holds: it
// moves to the first root secret at the host's next login. Until this
// count is zero, keep the older root secrets in [Config.Secrets]; a host
// whose digest's root secret is gone cannot log in (a 500, logged) until
// it is given a new password.
func (ad *Admin) HostsUnderOlderSecrets(ctx context.Context) (int, error) {
	a := ad.a
	n := 0
	signer := a.ring.Signer().ID
	err := walk.All(ctx, scanPage, a.store.ListHosts, func(h Host) string { return h.ID }, func(h Host) error {
		if id := hashfmt.MachineDigestKeyID(h.PasswordHash); id != "" && id != signer {
			n++
		}
		return nil
	})
	return n, err
}

// scanPage is how many users a walk over the whole Store (a reseal, the
// check of the root secrets) reads at a time.
const scanPage = 500

// reseal seals listed's TOTP secret again under the first root secret
// unless it is off or already there, and reports whether it did.
func (a *Authenticator) reseal(ctx context.Context, listed User) (bool, error) {
	if !listed.TOTPEnabled() || a.ring.SealedBySigner(listed.TOTPSecret) {
		return false, nil
	}
	err := a.store.UpdateUser(ctx, listed.Name, func(u *User) error {
		if !u.TOTPEnabled() || a.ring.SealedBySigner(u.TOTPSecret) {
			return errAlreadySealed
		}
		secret, err := a.ring.OpenTOTP(u.Name, u.TOTPSecret)
		if err != nil {
			return err
		}
		u.TOTPSecret, err = a.ring.SealTOTP(a.cfg.Rand, u.Name, secret)
		return err
	})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, errAlreadySealed), errors.Is(err, ErrNotFound):
		return false, nil
	}
	return false, fmt.Errorf("nmauth: reseal totp secret of %q: %w", listed.Name, err)
}

// errAlreadySealed stops an update that another process has already done.
var errAlreadySealed = errors.New("nmauth: already sealed under the newest key")

// UserInfo is what [Admin.ListUsers] tells of a user: never a
// password hash, a TOTP secret or a recovery code hash.
type UserInfo struct {
	Name     string
	Disabled bool
	// TOTPEnabled reports that the user has finished TOTP enrollment.
	TOTPEnabled bool
	// RecoveryCodesLeft is the number of unused recovery codes.
	RecoveryCodesLeft int
	// LockedUntil is the latest end among the user's backoffs (the
	// account-wide password backoff, each client address's, the TOTP
	// backoff); zero when none holds now.
	LockedUntil time.Time
	CreatedAt   time.Time
	// Broken names the parts of the user's record the Store could not
	// decode (see [User.Broken]); the fields above that depend on them
	// show their zero value. Empty for a sound record.
	Broken []string
}

// HostInfo is what [Admin.ListHosts] tells of a host: never its
// password hash.
type HostInfo struct {
	ID string
	// MACAddress is the registered MAC address; empty for none.
	MACAddress string
	Disabled   bool
	// LockedUntil is the latest end among the host's backoffs (the
	// account-wide one and each client address's); zero when none holds
	// now.
	LockedUntil time.Time
	CreatedAt   time.Time
	// Broken names the parts of the host's record the Store could not
	// decode, as [UserInfo.Broken] does.
	Broken []string
}

// ListUsers returns at most limit users whose names sort after after, in
// byte order; an empty after starts at the first. A page shorter than
// limit is the last; the Name of a page's last user is the after of the
// next page:
//
//	for after := ""; ; {
//		page, err := auth.ListUsers(ctx, after, 100)
//		if err != nil {
//			return err
//		}
//		// use page
//		if len(page) < 100 {
//			break
//		}
//		after = page[len(page)-1].Name
//	}
func (ad *Admin) ListUsers(ctx context.Context, after string, limit int) ([]UserInfo, error) {
	a := ad.a
	users, err := a.store.ListUsers(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	now := a.now()
	out := make([]UserInfo, len(users))
	for i, u := range users {
		out[i] = userInfo(u, now)
	}
	return out, nil
}

// userInfo is what may be told of u at now.
func userInfo(u User, now time.Time) UserInfo {
	return UserInfo{
		Name:              u.Name,
		Disabled:          u.Disabled,
		TOTPEnabled:       u.TOTPEnabled(),
		RecoveryCodesLeft: len(u.RecoveryCodes),
		LockedUntil:       u.State.v.LockedUntil(now, u.State.v.TOTPBlockedUntil),
		CreatedAt:         u.CreatedAt,
		Broken:            slices.Clone(u.Broken),
	}
}

// ListHosts returns at most limit hosts whose ids sort after after, in
// byte order, paged as [Admin.ListUsers] is; the ID of a page's
// last host is the after of the next page.
func (ad *Admin) ListHosts(ctx context.Context, after string, limit int) ([]HostInfo, error) {
	a := ad.a
	hosts, err := a.store.ListHosts(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	now := a.now()
	out := make([]HostInfo, len(hosts))
	for i, h := range hosts {
		out[i] = HostInfo{
			ID:          h.ID,
			MACAddress:  h.MACAddress,
			Disabled:    h.Disabled,
			LockedUntil: h.State.v.LockedUntil(now),
			CreatedAt:   h.CreatedAt,
			Broken:      slices.Clone(h.Broken),
		}
	}
	return out, nil
}
