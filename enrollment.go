package nmauth

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nmauth/nmauth/internal/hashfmt"
	"github.com/nmauth/nmauth/internal/keyed"
	"github.com/nmauth/nmauth/internal/secret"
)

// enrollKeyPrefix begins every enrollment key's secret (see
// [EnrollmentKey]).
const enrollKeyPrefix = "nmauth_ek_"

// maxEnrollTags bounds the tags of one key.
const maxEnrollTags = 16

var (
	// errNoEnrollmentKey is a key id that names no key; 404 over HTTP.
	errNoEnrollmentKey = fmt.Errorf("%w: enrollment key", ErrNotFound)
	// errHostExists is a join of a host id that is taken: it matches
	// ErrExists, and is a 400 that says so over HTTP, as Netmaker's
	// server answers it.
	errHostExists = fmt.Errorf("%w: %w", ErrExists, requestError("host already exists"))
	// errWeakHostSecret is a join whose host secret is no machine secret.
	errWeakHostSecret = requestError("the host's password must be a secret drawn at random, of 128 bits or more (as netclient draws)")
)

// EnrollmentKey is an enrollment key: a secret that lets hosts join on
// their own, as netclient join -t does, each with the id, MAC address and
// password it chose. Create one with [Admin.CreateEnrollmentKey], which
// shows its secret once; a host joins with [Authenticator.JoinHost].
//
// The record holds no secret in the clear: Digest is the keyed digest of
// the key's secret, as an access token's is (see [AccessToken]), so a
// copy of the database gives no key and lets no one test a guess. The
// secret is
//
//	nmauth_ek_<id>_<secret>_<check>
//
// in the access token's layout: the id (the key's public name, which
// lists show and revocation takes), 128 random bits, and a check that lets
// a replica refuse a made-up key with one keyed hash, before any Store
// call.
//
// A key limits its joins by a number of uses, or is Unlimited, and may
// expire besides; a revoked key is kept, marked, until it is deleted.
type EnrollmentKey struct {
	// ID names the key in lists, revocation and deletion; no secret.
	ID string `json:"id"`
	// Name labels the key: 1 to 64 printable characters.
	Name string `json:"name"`
	// Tags label it further, as Netmaker's keys are labelled.
	Tags []string `json:"tags,omitempty"`
	// Networks are the networks a host that joins with it joins.
	Networks []string `json:"networks,omitempty"`
	// Uses is how many hosts may join with it, when not Unlimited.
	Uses int `json:"uses"`
	// Unlimited lets any number of hosts join with it; Uses is then 0.
	Unlimited bool `json:"unlimited"`
	// Used counts the hosts that joined with it.
	Used int `json:"used"`
	// ExpiresAt is when it stops admitting joins; zero for never.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	// RevokedAt is when it was revoked; zero while it is not.
	RevokedAt time.Time `json:"revokedAt,omitzero"`
	// CreatedBy names who made it, "" for the master key.
	CreatedBy string    `json:"createdBy"`
	CreatedAt time.Time `json:"createdAt"`

	// Digest is for the Store alone: [Admin.EnrollmentKeys] and
	// [Admin.CreateEnrollmentKey] leave it empty.
	Digest string `json:"-"`
}

// Usable reports whether k admits a join at now: not revoked, not
// expired, and with a use left.
func (k EnrollmentKey) Usable(now time.Time) bool {
	return k.RevokedAt.IsZero() && (k.ExpiresAt.IsZero() || now.Before(k.ExpiresAt)) &&
		(k.Unlimited || k.Used < k.Uses)
}

// listedKey is k as a caller sees it: without its Digest.
func listedKey(k EnrollmentKey) EnrollmentKey {
	k.Digest = ""
	k.Tags, k.Networks = slices.Clone(k.Tags), slices.Clone(k.Networks)
	return k
}

// enrollKeys returns the guarded enrollment-key store, or
// [ErrEnrollmentKeysOff] when the Store keeps no enrollment keys.
func (a *Authenticator) enrollKeys() (*guardedEnroll, error) {
	inner, ok := a.guard.Store.(EnrollmentKeyStore)
	if !ok {
		return nil, ErrEnrollmentKeysOff
	}
	return &guardedEnroll{g: a.guard, inner: inner}, nil
}

// CreateEnrollmentKey makes an enrollment key of k's Name, Tags,
// Networks, Uses, Unlimited and ExpiresAt; its other fields are set here.
// A key has either a number of uses or Unlimited, and may have an expiry
// in the future besides. It returns the key as [Admin.EnrollmentKeys]
// lists it, and its secret, which is shown this once and never again.
func (ad *Admin) CreateEnrollmentKey(ctx context.Context, k EnrollmentKey) (EnrollmentKey, string, error) {
	a := ad.a
	keys, err := a.enrollKeys()
	if err != nil {
		return EnrollmentKey{}, "", err
	}
	now := a.now()
	rec, err := newEnrollKeyRecord(k, now)
	if err != nil {
		return EnrollmentKey{}, "", err
	}
	if p, ok := actorOf(ctx); ok {
		rec.CreatedBy = p.Name
	}
	secret, err := a.mintEnrollKey(&rec)
	if err != nil {
		return EnrollmentKey{}, "", err
	}
	if err := keys.CreateEnrollmentKey(ctx, rec); err != nil {
		return EnrollmentKey{}, "", err
	}
	a.emit(ctx, Event{Type: EventEnrollmentKeyCreated, Name: rec.Name, TokenID: rec.ID})
	return listedKey(rec), secret, nil
}

// newEnrollKeyRecord checks k's labels, limits and networks at now and
// returns the record they make.
func newEnrollKeyRecord(k EnrollmentKey, now time.Time) (EnrollmentKey, error) {
	if !validLabel(k.Name) {
		return EnrollmentKey{}, requestError("name must be 1 to 64 printable characters")
	}
	if len(k.Tags) > maxEnrollTags || slices.ContainsFunc(k.Tags, func(t string) bool { return !validLabel(t) }) {
		return EnrollmentKey{}, requestError("tags must be at most 16, each 1 to 64 printable characters")
	}
	switch {
	case k.Uses < 0:
		return EnrollmentKey{}, requestError("uses must not be negative")
	case k.Unlimited == (k.Uses > 0):
		return EnrollmentKey{}, requestError("give a key either a number of uses or unlimited uses")
	case !k.ExpiresAt.IsZero() && !k.ExpiresAt.After(now):
		return EnrollmentKey{}, requestError("expiration must be in the future")
	}
	networks, err := scopeNetworks(k.Networks)
	if err != nil {
		return EnrollmentKey{}, err
	}
	return EnrollmentKey{
		Name: k.Name, Tags: slices.Clone(k.Tags), Networks: networks,
		Uses: k.Uses, Unlimited: k.Unlimited,
		ExpiresAt: k.ExpiresAt.Truncate(time.Second).UTC(), CreatedAt: now.UTC(),
	}, nil
}

// mintEnrollKey draws k's id and secret, sets its digest, and returns the
// secret as the key's holder gives it.
func (a *Authenticator) mintEnrollKey(k *EnrollmentKey) (string, error) {
	id, digest, token, err := a.mintKeyedSecret(enrollKeyPrefix, enrollDigestName)
	if err != nil {
		return "", fmt.Errorf("nmauth: enrollment key: %w", err)
	}
	k.ID, k.Digest = id, digest
	return token, nil
}

// machineDigest is the stored form of a machine MAC under k, as
// [keyRing.digestMachineSecret] writes it.
func machineDigest(k *ringKey, mac [32]byte) string {
	return hashfmt.MachineDigestPrefix + k.ID + "$" + base64.RawStdEncoding.EncodeToString(mac[:])
}

// enrollDigestName is what an enrollment key's digest is bound to: its
// id, in a namespace of its own, so that no host's or access token's
// digest is ever one.
func enrollDigestName(id string) string { return "enrollment key " + id }

// checkEnrollKey reads an enrollment key's secret and checks its check
// against every root secret: one keyed hash for each, and no Store call.
// It returns the key's id and the digest that the Store holds of it.
func (a *Authenticator) checkEnrollKey(key string) (id, digest string, err error) {
	id, secret, check, ok := keyed.Split(enrollKeyPrefix, key)
	if !ok {
		return "", "", ErrInvalidEnrollmentKey
	}
	k, mac := a.keyedCheck(enrollDigestName(id), secret, check)
	if k == nil {
		return "", "", ErrInvalidEnrollmentKey
	}
	return id, machineDigest(k, mac), nil
}

// JoinHost lets a host join with an enrollment key, as netclient join
// does: the host's id, MAC address (may be empty) and password, which it
// drew itself, become its credential, kept as [Admin.CreateHost] keeps a
// machine secret. A password that is no secret drawn at random (128 bits
// or more, see [Admin.CreateHost]) is refused: a key admits machines, not
// passwords a person chose. It returns the key as it is after the join,
// whose Networks are those the host joins; the application adds the host
// to them (see [Config.HostJoined]).
//
// The join is one atomic step of the Store: it takes one of the key's
// uses and creates the host together, or does neither, so a key of N
// uses lets exactly N hosts join however many try at once, on every
// replica of one database. A key that is unknown, wrong, revoked, expired
// or used up gives [ErrInvalidEnrollmentKey], a host id that is taken
// [ErrExists], and neither writes anything: a taken id never gets a new
// password this way. A made-up key costs one keyed hash and no Store
// call.
func (a *Authenticator) JoinHost(ctx context.Context, key, id, mac, password string) (EnrollmentKey, error) {
	keys, err := a.enrollKeys()
	if err != nil {
		return EnrollmentKey{}, err
	}
	// The key first: a made-up one costs its keyed hash and nothing more.
	keyID, digest, err := a.checkEnrollKey(key)
	if err != nil {
		return EnrollmentKey{}, err
	}
	h, pw, err := a.joiningHost(id, mac, password)
	if err != nil {
		return EnrollmentKey{}, err
	}
	h.PasswordHash = a.ring.DigestMachineSecret(h.ID, pw)
	defer a.forget(KindHost, h.ID)
	k, err := keys.JoinHost(ctx, keyID, digest, h, h.CreatedAt)
	switch {
	case errors.Is(err, ErrNotFound):
		return EnrollmentKey{}, ErrInvalidEnrollmentKey
	case errors.Is(err, ErrExists):
		return EnrollmentKey{}, errHostExists
	case err != nil:
		return EnrollmentKey{}, err
	}
	a.emit(ctx, Event{Type: EventHostJoined, Kind: KindHost, Name: h.ID, TokenID: keyID})
	return listedKey(k), nil
}

// joiningHost checks a joining host's id, MAC address and password and
// returns its record, but its password's digest, and the prepared
// password.
func (a *Authenticator) joiningHost(id, mac, password string) (Host, string, error) {
	id, err := PrepareHostID(id)
	if err != nil {
		return Host{}, "", err
	}
	if mac, err = prepareMAC(mac); err != nil {
		return Host{}, "", err
	}
	pw, err := checkPasswordPolicy(password)
	if err != nil {
		return Host{}, "", err
	}
	if !secret.IsMachine(pw) {
		return Host{}, "", errWeakHostSecret
	}
	h := Host{ID: id, MACAddress: mac, CreatedAt: a.now()}
	if h.State.v.Generation, err = a.firstGeneration(); err != nil {
		return Host{}, "", err
	}
	return h, pw, nil
}

// EnrollmentKeys lists every enrollment key, oldest first, revoked,
// expired and used-up ones too, without their secrets.
func (ad *Admin) EnrollmentKeys(ctx context.Context) ([]EnrollmentKey, error) {
	keys, err := ad.a.enrollKeys()
	if err != nil {
		return nil, err
	}
	ks, err := keys.ListEnrollmentKeys(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]EnrollmentKey, len(ks))
	for i, k := range ks {
		out[i] = listedKey(k)
	}
	return out, nil
}

// RevokeEnrollmentKey stops the key id admitting joins at once, on every
// replica. The key is kept, with the time it was revoked, for audit,
// until [Admin.DeleteEnrollmentKey]; revoking it again changes nothing.
// An unknown id is [ErrNotFound].
func (ad *Admin) RevokeEnrollmentKey(ctx context.Context, id string) error {
	a := ad.a
	keys, err := a.enrollKeys()
	if err != nil {
		return err
	}
	err = keys.RevokeEnrollmentKey(ctx, id, a.now().UTC())
	if errors.Is(err, ErrNotFound) {
		return errNoEnrollmentKey
	}
	if err != nil {
		return err
	}
	a.emit(ctx, Event{Type: EventEnrollmentKeyRevoked, TokenID: id})
	return nil
}

// DeleteEnrollmentKey deletes the key id, revoked or not: it admits no
// more joins, and is no longer listed. The hosts that joined with it
// stay. An unknown id is [ErrNotFound].
func (ad *Admin) DeleteEnrollmentKey(ctx context.Context, id string) error {
	a := ad.a
	keys, err := a.enrollKeys()
	if err != nil {
		return err
	}
	k, err := keys.GetEnrollmentKey(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return errNoEnrollmentKey
	}
	if err != nil {
		return err
	}
	if err := keys.DeleteEnrollmentKey(ctx, id); err != nil {
		return err
	}
	a.emit(ctx, Event{Type: EventEnrollmentKeyDeleted, Name: k.Name, TokenID: id})
	return nil
}

// actorOf is the principal ctx names as the actor of its calls: the
// request's bearer, else the one [WithActor] names.
func actorOf(ctx context.Context) (Principal, bool) {
	if p, ok := FromContext(ctx); ok {
		return p, true
	}
	if p, ok := ctx.Value(actorKey{}).(*Principal); ok {
		return *p, true
	}
	return Principal{}, false
}
