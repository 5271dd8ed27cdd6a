package nmauth

import (
	"context"
	"fmt"

	"github.com/nmauth/nmauth/internal/hashfmt"
	"github.com/nmauth/nmauth/internal/secret"
)

// How a login checks the secret it was presented, prepared and classified
// once at the door (see internal/secret), against what an account stores,
// and what it stores next: as Django's check_password, the stored
// credential is identified once (hashfmt), then verified and asked whether
// it needs an update on that one format; the answer carries the new
// credential, so that nothing after the check holds the secret.

// failUnknown spends the time of a real check of pw, so that an unknown
// name cannot be told from a wrong password: a digest for a host's
// machine secret, an argon2id run otherwise.
func (a *Authenticator) failUnknown(ctx context.Context, kind PrincipalKind, name string, pw secret.Presented) error {
	if pw.Machine {
		a.ring.dummyMachineCheck(name, pw.Text)
	} else if err := a.hasher.verifyDummy(ctx, pw.Text); err != nil {
		return err
	}
	a.emit(ctx, Event{Type: EventLoginFailed, Kind: kind, Name: safeName(name)})
	return ErrInvalidCredentials
}

// verify checks pw against an account's stored credential, of the format
// the caller identified once from it: a machine-secret digest or a
// password hash. For a right secret of an account that may log in
// (grantable), next is what the credential is stored as from now on, ""
// to keep it (see nextCredential); a disabled account's right secret
// costs no more than a wrong one. A password hash whose check runs more
// threads than the *held hashing slots the caller holds takes as many
// first (see [passwordHasher.grow]), whose error, of the gate, is
// returned as it is; a machine digest takes none. A credential that
// cannot be read, or whose parameters are beyond the bounds of a login's
// work, is a fault of the data, never a wrong password, and nothing is
// computed on it. The error names the account and what is wrong, never
// the hash; the route that answers 500 logs it, once.
func (a *Authenticator) verify(ctx context.Context, t loginTarget, format hashfmt.Format, stored string, pw secret.Presented,
	grantable bool, held *int) (ok bool, next string, err error) {
	var upgrade bool
	if format == hashfmt.MachineDigest {
		ok, upgrade, err = a.ring.checkMachineSecret(stored, t.name, pw.Text)
	} else {
		var hash hashfmt.Hash
		if hash, err = hashfmt.Parse(format, stored); err == nil {
			if err := a.hasher.grow(ctx, held, hash.Threads()); err != nil {
				return false, "", err
			}
			ok, upgrade, err = a.hasher.engines().Check(hash, pw.Text)
		}
	}
	if err != nil {
		return false, "", credentialFault(t, err)
	}
	if !ok || !grantable {
		return ok, "", nil
	}
	return true, a.nextCredential(t, format, pw, upgrade), nil
}

// credentialFault is the error of t's stored credential that cannot be
// checked: a fault of the data, naming the account and what is wrong.
func credentialFault(t loginTarget, err error) error {
	return fmt.Errorf("%w: password hash of %s %q: %w", ErrDataFault, t.kind, t.name, err)
}

// nextCredential returns what a right secret is stored as from now on, or
// "" to keep what is stored: a host's machine secret moves to its digest
// under the first root secret, from a password hash or from another root
// secret's digest; a password hash weaker than a new one would be is
// hashed again. format is that of the credential stored, as identified
// for its check, and upgrade the verdict of its check that it needs an
// update. The caller of an argon2id run holds a hashing slot.
func (a *Authenticator) nextCredential(t loginTarget, format hashfmt.Format, pw secret.Presented, upgrade bool) string {
	switch {
	case pw.Machine && (upgrade || format != hashfmt.MachineDigest):
		return a.ring.digestMachineSecret(t.name, pw.Text)
	case !upgrade:
		return ""
	}
	hash, err := a.hasher.hashHeld(pw.Text)
	if err != nil {
		a.log.Warn("password hash upgrade skipped", "kind", string(t.kind), "name", t.name, "err", err)
		return ""
	}
	return hash
}
