package nmauth

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nmauth/nmauth/internal/hasher"
	"github.com/nmauth/nmauth/internal/hashfmt"
	"github.com/nmauth/nmauth/internal/importrec"
	"github.com/nmauth/nmauth/internal/names"
	"github.com/nmauth/nmauth/internal/secret"
)

// ImportedUser is a user account brought over from another system with
// the credentials it has there, so that its user notices nothing.
type ImportedUser struct {
	// Name is the username; it is prepared as [PrepareUsername] prepares
	// it, so "Alice" is stored, and logs in, as "alice".
	Name string
	// PasswordHash is the hash the other system stored: bcrypt of a
	// cost from 4 to 14 ($2a$, $2b$, $2y$), argon2id or argon2i as PHC strings,
	// scrypt as a PHC string ($scrypt$ln=…,r=…,p=…$salt$key), or
	// PBKDF2-SHA256 ($pbkdf2-sha256$i=…,l=…$salt$key, or Django's
	// pbkdf2_sha256$iterations$salt$key). It is kept as it is until the
	// user's next right login, which replaces it with an argon2id hash.
	PasswordHash string
	// Password is the password in the clear, for a system that kept no
	// hash; it is hashed with argon2id at once and never stored. At most
	// one of PasswordHash and Password may be set; with neither, the user
	// has no password that logs in (one who signs in by single sign-on).
	Password string
	// TOTPSecret is the user's TOTP secret in base32, as an authenticator
	// app holds it (HMAC-SHA1, 6 digits, 30 seconds); "" when TOTP is off.
	// It is sealed under the first root secret on import.
	TOTPSecret string
	// Disabled refuses the user's logins, as [Admin.DisableUser].
	Disabled bool
}

// ImportedHost is a host brought over from another system with the
// credentials it has there, so that its client keeps logging in.
type ImportedHost struct {
	// ID is the host id.
	ID string
	// MACAddress is the host's registered MAC address in any form
	// [net.ParseMAC] reads; "" for none.
	MACAddress string
	// PasswordHash and Password are as in [ImportedUser], but that one of
	// them is required. A host's right login replaces the hash with the
	// digest of a machine secret (see [Admin.CreateHost]), or with
	// an argon2id hash for any other password.
	PasswordHash string
	Password     string
	// Disabled refuses the host's logins, as [Admin.DisableHost].
	Disabled bool
	// Networks are the networks the host is a member of, for node login;
	// each is handed to the addMember of [Admin.ImportHost].
	Networks []string
}

// ImportResult tells what an import did, or with [Admin.PlanUserImport]
// and [Admin.PlanHostImport] would do.
type ImportResult struct {
	// Name is the prepared username or host id.
	Name string
	// Added reports that the account was (or would be) stored. False
	// means an account of that name already exists and nothing of it was
	// changed, so that importing the same records again changes nothing.
	Added bool
	// Weak says why the imported password hash is cheap to attack ("bcrypt
	// cost 5 below 10"), "" when it is not. A weak hash is replaced at the
	// account's next right login; until then a copy of the database tests
	// guesses at its cost.
	Weak string
	// Memberships counts the networks the host was (or would be) made a
	// member of, beside those it already had.
	Memberships int
}

// ImportUser adds a user with the credentials it already has (see
// [ImportedUser]) in one create of the Store, so that an interrupted
// import can simply run again: a user of that name that already exists is
// left as it is, with Added false. A record that cannot be imported gives
// [ErrInvalidImport] or [ErrInvalidUsername] and stores nothing.
func (ad *Admin) ImportUser(ctx context.Context, in ImportedUser) (ImportResult, error) {
	a := ad.a
	return a.importUser(ctx, in, true)
}

// PlanUserImport checks in as [Admin.ImportUser] does and tells
// what it would do, writing nothing.
func (ad *Admin) PlanUserImport(ctx context.Context, in ImportedUser) (ImportResult, error) {
	a := ad.a
	return a.importUser(ctx, in, false)
}

func (a *Authenticator) importUser(ctx context.Context, in ImportedUser, write bool) (ImportResult, error) {
	name, err := PrepareUsername(in.Name)
	if err != nil {
		return ImportResult{}, err
	}
	r := ImportResult{Name: name}
	secret, ok := importrec.TOTPSecret(in.TOTPSecret)
	if !ok {
		return r, fmt.Errorf("%w: the TOTP secret is not 80 to 512 bits of base32", ErrInvalidImport)
	}
	hash, weak, err := a.importedCredential(ctx, in.PasswordHash, in.Password, write, func(pw string) (string, error) {
		return a.hasher.Hash(ctx, pw)
	})
	if err != nil {
		return r, err
	}
	if !write {
		_, err := a.store.GetUser(ctx, name)
		return planned(r, weak, err)
	}
	if hash == "" {
		if hash, err = a.unusableHash(); err != nil {
			return r, err
		}
	}
	u := User{Name: name, PasswordHash: hash, Disabled: in.Disabled, CreatedAt: a.now()}
	if secret != nil {
		if u.TOTPSecret, err = a.ring.SealTOTP(a.cfg.Rand, name, secret); err != nil {
			return r, err
		}
	}
	if u.State.v.Generation, err = a.firstGeneration(); err != nil {
		return r, err
	}
	defer a.forget(KindUser, name)
	switch err := a.store.CreateUser(ctx, u); {
	case errors.Is(err, ErrExists):
		return r, nil
	case err != nil:
		return r, err
	}
	r.Added, r.Weak = true, weak
	return r, nil
}

// ImportHost adds a host with the credentials it already has (see
// [ImportedHost]) in one create of the Store; a host of that id that
// already exists is left as it is, with Added false. Then, whether the
// host was added or found, addMember is called for each of its networks
// and reports whether it made the host a member (false when it already
// was); nil leaves memberships to the caller. A record that cannot be
// imported gives [ErrInvalidImport], [ErrInvalidHost] or
// [ErrInvalidNetwork] and stores nothing.
func (ad *Admin) ImportHost(ctx context.Context, in ImportedHost, addMember func(ctx context.Context, network, hostID string) (bool, error)) (ImportResult, error) {
	a := ad.a
	r, h, err := a.importHost(ctx, in, true)
	if err != nil {
		return r, err
	}
	defer a.forget(KindHost, r.Name)
	switch err := a.store.CreateHost(ctx, h); {
	case errors.Is(err, ErrExists):
		r.Weak = ""
	case err != nil:
		return r, err
	default:
		r.Added = true
	}
	if addMember == nil {
		return r, nil
	}
	for _, network := range in.Networks {
		added, err := addMember(ctx, network, r.Name)
		if err != nil {
			return r, fmt.Errorf("nmauth: host %q stored, but not yet a member of %q: %w", r.Name, network, err)
		}
		if added {
			r.Memberships++
		}
	}
	return r, nil
}

// PlanHostImport checks in as [Admin.ImportHost] does and tells
// what it would do, writing nothing: isMember, when set, tells whether
// the host is already a member of a network.
func (ad *Admin) PlanHostImport(ctx context.Context, in ImportedHost, isMember func(ctx context.Context, network, hostID string) (bool, error)) (ImportResult, error) {
	a := ad.a
	r, _, err := a.importHost(ctx, in, false)
	if err != nil {
		return r, err
	}
	_, err = a.store.GetHost(ctx, r.Name)
	if r, err = planned(r, r.Weak, err); err != nil {
		return r, err
	}
	for _, network := range in.Networks {
		member := false
		if isMember != nil {
			if member, err = isMember(ctx, network, r.Name); err != nil {
				return r, err
			}
		}
		if !member {
			r.Memberships++
		}
	}
	return r, nil
}

// importHost checks in and, when write is set, returns the record to
// store.
func (a *Authenticator) importHost(ctx context.Context, in ImportedHost, write bool) (ImportResult, Host, error) {
	id, err := PrepareHostID(in.ID)
	if err != nil {
		return ImportResult{}, Host{}, err
	}
	r := ImportResult{Name: id}
	mac, err := prepareMAC(in.MACAddress)
	if err != nil {
		return r, Host{}, err
	}
	for _, network := range in.Networks {
		if !names.Network(network) {
			return r, Host{}, fmt.Errorf("%w: %q", ErrInvalidNetwork, names.Safe(network))
		}
	}
	if in.PasswordHash == "" && in.Password == "" {
		return r, Host{}, fmt.Errorf("%w: a host needs its password or its password hash", ErrInvalidImport)
	}
	hash, weak, err := a.importedCredential(ctx, in.PasswordHash, in.Password, write, func(pw string) (string, error) {
		if secret.IsMachine(pw) {
			return a.ring.DigestMachineSecret(id, pw), nil
		}
		return a.hasher.Hash(ctx, pw)
	})
	r.Weak = weak
	if err != nil || !write {
		return r, Host{}, err
	}
	h := Host{ID: id, MACAddress: mac, PasswordHash: hash, Disabled: in.Disabled, CreatedAt: a.now()}
	h.State.v.Generation, err = a.firstGeneration()
	return r, h, err
}

// importedCredential checks an imported hash or password and returns what
// is stored of it: the hash as it is, or the password as store makes it
// (only when write is set). It says why the credential is weak. With
// neither, it returns "".
func (a *Authenticator) importedCredential(ctx context.Context, hash, password string, write bool, store func(string) (string, error)) (stored, weak string, err error) {
	switch {
	case hash != "" && password != "":
		return "", "", fmt.Errorf("%w: both a password and a password hash", ErrInvalidImport)
	case hash != "":
		weak, err := hashfmt.Importable(hash)
		if err != nil {
			return "", "", fmt.Errorf("%w: password hash: %s", ErrInvalidImport, strings.TrimPrefix(err.Error(), "nmauth: "))
		}
		return hash, weak, nil
	case password == "":
		return "", "", nil
	}
	// The other system's policy let the password in; refusing it here
	// would lock its user out, so a short one is imported and reported.
	pw, err := preparePassword(password)
	if err == nil && len(pw) > maxPasswordLen {
		err = fmt.Errorf("%w: longer than %d bytes", ErrInvalidPassword, maxPasswordLen)
	}
	if err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrInvalidImport, err)
	}
	if len(pw) < minPasswordLen {
		weak = fmt.Sprintf("a password shorter than %d bytes", minPasswordLen)
	}
	if !write {
		return "", weak, nil
	}
	stored, err = store(pw)
	return stored, weak, err
}

// planned completes the result of a plan from the read of the account:
// absent, it would be added.
func planned(r ImportResult, weak string, readErr error) (ImportResult, error) {
	switch {
	case errors.Is(readErr, ErrNotFound):
		r.Added, r.Weak = true, weak
		return r, nil
	case readErr != nil:
		return r, readErr
	}
	r.Weak = ""
	return r, nil
}

// unusableHash is the password hash of an account imported without a
// password: an argon2id string of random bytes, which no password is known
// to match, so that a password login answers as a wrong password does.
func (a *Authenticator) unusableHash() (string, error) {
	h, err := hasher.Unusable(a.cfg.Rand)
	if err != nil {
		return "", fmt.Errorf("nmauth: unusable password hash: %w", err)
	}
	return h, nil
}

// ImportConflicts finds the records of one import that would be one
// account, of kind [KindUser] or [KindHost]: users whose names
// [PrepareUsername] makes one ("Alice" and "alice"), hosts whose ids
// differ only in case once [PrepareHostID] has prepared them. It returns
// the groups of two or more indexes into names, each in the order given,
// and the groups in the order of their first record. Import none of a
// group: the first imported would take the account, and every other
// would be counted as already there, its password or its single sign-on
// identity then let into an account that is not its own. A name that does
// not prepare is in no group; its own import refuses it.
func (ad *Admin) ImportConflicts(kind PrincipalKind, names []string) [][]int {
	prepare := func(s string) (string, error) {
		id, err := PrepareHostID(s)
		return strings.ToLower(id), err
	}
	if kind == KindUser {
		prepare = PrepareUsername
	}
	return importrec.Conflicts(names, prepare)
}
