package nmauth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"

	"github.com/nmauth/nmauth/internal/hashfmt"
	"github.com/nmauth/nmauth/internal/secret"
)

// A login checks the presented secret, prepared and classified once (see
// internal/secret), against the stored credential as Django's
// check_password does: identified once (identify), then verified and
// asked whether it needs an update on that one format (verify).

// credential is an account's stored credential as a login identified it,
// once: a machine-secret digest, with the key of the root secret it is
// under, or a password hash of the registry (hashfmt), parsed and bounded.
// The zero credential is that of an account that does not exist, which
// verify answers wrong after the work of a right secret's check.
type credential struct {
	found  bool
	stored string
	format hashfmt.Format
	// key and mac are a machine digest's.
	key *ringKey
	mac [sha256.Size]byte
	// hash is a password hash's.
	hash hashfmt.Hash
	// err is why the credential cannot be checked: a fault of the data.
	err error
}

// identify reads an account's stored credential once, without spending
// any work on it.
func (a *Authenticator) identify(stored string) credential {
	c := credential{found: true, stored: stored, format: hashfmt.Identify(stored)}
	if c.format == hashfmt.MachineDigest {
		var mac []byte
		c.key, mac, c.err = a.ring.ParseMachineDigest(stored)
		copy(c.mac[:], mac)
	} else {
		c.hash, c.err = a.hasher.Parse(c.format, stored)
	}
	return c
}

// identified is c when c is what stored was identified as, else stored
// identified now: a login that read the credential once checks what it
// read without identifying it again.
func (a *Authenticator) identified(c credential, stored string) credential {
	if c.found && c.stored == stored {
		return c
	}
	return a.identify(stored)
}

// verify checks pw against c. For a right secret of an account that may
// log in (grantable), next is what the credential is stored as from now
// on, "" to keep it (see nextCredential); a disabled account's right
// secret costs no more than a wrong one. An account that does not exist
// costs what a right secret's check costs: a digest for a host's machine
// secret, an argon2id run otherwise. A password hash whose check runs
// more threads than the *held hashing slots the caller holds takes as
// many first (see [hasher.Hasher.Grow]), whose error, of the gate, is
// returned as it is; a machine digest takes none. A credential that
// cannot be read, or whose parameters are beyond the bounds of a login's
// work, is a fault of the data, never a wrong password, and nothing is
// computed on it. The error names the account and what is wrong, never
// the hash; the route that answers 500 logs it, once.
func (a *Authenticator) verify(ctx context.Context, t loginTarget, c credential, pw secret.Presented,
	grantable bool, held *int) (ok bool, next string, err error) {
	var upgrade bool
	switch {
	case !c.found && pw.Machine:
		got := a.ring.Signer().MachineMAC(t.name, pw.Text)
		_ = hmac.Equal(got[:], c.mac[:])
		return false, "", nil
	case !c.found:
		a.hasher.CheckDummy(pw.Text)
		return false, "", nil
	case c.err != nil:
		return false, "", credentialFault(t, c.err)
	case c.key != nil:
		got := c.key.MachineMAC(t.name, pw.Text)
		ok, upgrade = hmac.Equal(got[:], c.mac[:]), c.key != a.ring.Signer()
	default:
		if err := a.hasher.Grow(ctx, held, c.hash.Threads()); err != nil {
			return false, "", err
		}
		if ok, upgrade, err = c.hash.Check(pw.Text); err != nil {
			return false, "", credentialFault(t, err)
		}
	}
	if !ok || !grantable {
		return ok, "", nil
	}
	return true, a.nextCredential(t, c.format, pw, upgrade), nil
}

// credentialFault is the error of t's stored credential that cannot be
// checked: a fault of the data, naming the account and what is wrong.
func credentialFault(t loginTarget, err error) error {
	return fmt.Errorf("%w: password hash of %s %q: %w", ErrDataFault, t.kind, t.name, err)
}

// nextCredential returns what a right secret is stored as from now on, or
// "" to keep what is stored: a host's machine secret moves to its digest
// under the first root secret; a password hash its check found in need of
// an update (upgrade) is hashed again, by a caller holding a slot.
func (a *Authenticator) nextCredential(t loginTarget, format hashfmt.Format, pw secret.Presented, upgrade bool) string {
	switch {
	case pw.Machine && (upgrade || format != hashfmt.MachineDigest):
		return a.ring.DigestMachineSecret(t.name, pw.Text)
	case !upgrade:
		return ""
	}
	hash, err := a.hasher.HashHeld(pw.Text)
	if err != nil {
		a.log.Warn("password hash upgrade skipped", "kind", string(t.kind), "name", t.name, "err", err)
		return ""
	}
	return hash
}
