package passkey

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/nmauth/nmauth"
)

// maxNameLen bounds a passkey's name, in characters.
const maxNameLen = 64

// Info is what may be told of a passkey: never its public key.
type Info struct {
	// ID is the credential id in base64url, which names the passkey in a
	// removal.
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	CreatedAt    time.Time `json:"createdAt"`
	LastUsedAt   time.Time `json:"lastUsedAt,omitzero"`
	SignCount    uint32    `json:"signCount"`
	Discoverable bool      `json:"discoverable"`
	// Synced reports that the passkey may be backed up to other devices
	// (the authenticator's backup eligibility).
	Synced bool `json:"synced"`
}

func info(p Passkey) Info {
	return Info{
		ID:           base64.RawURLEncoding.EncodeToString(p.ID),
		Name:         p.Name,
		CreatedAt:    p.CreatedAt,
		LastUsedAt:   p.LastUsedAt,
		SignCount:    p.SignCount,
		Discoverable: p.Discoverable,
		Synced:       p.BackupEligible,
	}
}

// Registered is the outcome of a registration.
type Registered struct {
	Passkey Info `json:"passkey"`
	// AuthToken is, when the passkey is the user's first second factor, a
	// fresh user token that passed it: turning on a second factor revokes
	// every earlier token of the account, the caller's included, as
	// turning TOTP on does. Empty otherwise.
	AuthToken string `json:"authToken,omitempty"`
}

// owner checks that p may act on the passkeys of the user named username:
// the user, or with master also the master key; and returns the user and
// the user's live passkeys.
func (m *Manager) owner(ctx context.Context, p nmauth.Principal, username string, master bool) (nmauth.UserInfo, Record, error) {
	name, err := nmauth.PrepareUsername(username)
	if err != nil {
		return nmauth.UserInfo{}, Record{}, err
	}
	self := p.Kind == nmauth.KindUser && p.Name == name
	if !self && (!master || p.Kind != nmauth.KindMaster) {
		return nmauth.UserInfo{}, Record{}, nmauth.ErrForbidden
	}
	return m.account(ctx, name)
}

// BeginRegistration starts the registration of a passkey named name for the
// user named username, on behalf of p, which must be that user's token. A
// user who has a second factor already must have passed one within
// [Config.PresenceWindow] ([ErrPresence]). It returns the options for the
// browser's navigator.credentials.create, in the JSON form that
// PublicKeyCredential.parseCreationOptionsFromJSON reads; the passkeys the
// user has are excluded, so an authenticator is not registered twice.
func (m *Manager) BeginRegistration(ctx context.Context, p nmauth.Principal, username, name string) (*protocol.CredentialCreation, error) {
	user, rec, err := m.owner(ctx, p, username, false)
	if err != nil {
		return nil, err
	}
	if name, err = checkName(name); err != nil {
		return nil, err
	}
	if hasSecondFactor(user, rec) && !m.recentPresence(p) {
		return nil, ErrPresence
	}
	if len(rec.Passkeys) >= m.cfg.MaxPasskeys {
		return nil, ErrTooMany
	}
	if len(rec.Handle) == 0 {
		if rec.Handle, err = newHandle(); err != nil {
			return nil, err
		}
	}
	selection := protocol.AuthenticatorSelection{ResidentKey: protocol.ResidentKeyRequirementDiscouraged, UserVerification: m.userVerification()}
	if m.cfg.Passwordless {
		required := true
		selection.ResidentKey, selection.RequireResidentKey = protocol.ResidentKeyRequirementRequired, &required
	}
	wu := webUser{name: user.Name, rec: rec}
	creation, session, err := m.web.BeginRegistration(wu,
		webauthn.WithExclusions(webauthn.Credentials(wu.WebAuthnCredentials()).CredentialDescriptors()),
		webauthn.WithAuthenticatorSelection(selection))
	if err != nil {
		return nil, fmt.Errorf("passkey: begin registration: %w", err)
	}
	err = m.putChallenge(ctx, session.Challenge, Challenge{Flow: FlowRegister, User: user.Name, Handle: rec.Handle, Name: name})
	if err != nil {
		return nil, err
	}
	return creation, nil
}

// FinishRegistration checks the browser's answer to a challenge of
// [Manager.BeginRegistration], a PublicKeyCredential as JSON (its toJSON()),
// and stores the new passkey. The challenge is taken back whatever the
// outcome, so a registration is tried once; a refused one stores nothing
// ([ErrChallenge], [ErrRegistration], [ErrMalformed]). When the passkey is
// the user's first second factor, the user's tokens are revoked first and a
// fresh one returned.
func (m *Manager) FinishRegistration(ctx context.Context, p nmauth.Principal, username string, body []byte) (Registered, error) {
	user, rec, err := m.owner(ctx, p, username, false)
	if err != nil {
		return Registered{}, err
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(body)
	if err != nil {
		return Registered{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	challenge := parsed.Response.CollectedClientData.Challenge
	ch, err := m.takeChallenge(ctx, challenge, FlowRegister, user.Name)
	if err != nil {
		return Registered{}, err
	}
	first := !hasSecondFactor(user, rec)
	if !first && !m.recentPresence(p) {
		return Registered{}, ErrPresence
	}
	session := webauthn.SessionData{
		Challenge:        challenge,
		RelyingPartyID:   m.cfg.RPID,
		UserID:           ch.Handle,
		UserVerification: m.userVerification(),
		CredParams:       webauthn.CredentialParametersDefault(),
	}
	cred, err := m.web.CreateCredential(webUser{name: user.Name, rec: Record{Handle: ch.Handle}}, session, parsed)
	if err != nil {
		return Registered{}, fmt.Errorf("%w: %w", ErrRegistration, err)
	}
	pk := newPasskey(cred, ch.Name, m.cfg.Passwordless, m.now())
	if first {
		// Before the passkey is stored: should anything after fail, more
		// is revoked than needed, never less.
		if err := m.auth.Admin().RevokeUserTokens(ctx, user.Name); err != nil {
			return Registered{}, err
		}
	}
	if err := m.addPasskey(ctx, user, ch.Handle, pk); err != nil {
		return Registered{}, err
	}
	m.ext.Emit(ctx, nmauth.Event{Type: EventAdded, Kind: nmauth.KindUser, Name: user.Name})
	out := Registered{Passkey: info(pk)}
	if first {
		login, err := m.ext.LoginVerified(ctx, user.Name)
		if err != nil {
			return Registered{}, err
		}
		out.AuthToken = login.AuthToken
	}
	return out, nil
}

func newPasskey(c *webauthn.Credential, name string, discoverable bool, now time.Time) Passkey {
	transports := make([]string, len(c.Transport))
	for i, t := range c.Transport {
		transports[i] = string(t)
	}
	return Passkey{
		ID:             c.ID,
		Name:           name,
		PublicKey:      c.PublicKey,
		SignCount:      c.Authenticator.SignCount,
		Transports:     transports,
		AAGUID:         c.Authenticator.AAGUID,
		UserVerified:   c.Flags.UserVerified,
		BackupEligible: c.Flags.BackupEligible,
		BackupState:    c.Flags.BackupState,
		Discoverable:   discoverable,
		CreatedAt:      now,
	}
}

// addPasskey stores pk in the record of user, made with handle: a new
// record, or the user's, replacing one of an earlier account of the name.
// A record that got another handle meanwhile, by a registration begun at
// the same time, refuses it: the authenticator holds it under the handle
// it was given.
func (m *Manager) addPasskey(ctx context.Context, user nmauth.UserInfo, handle []byte, pk Passkey) error {
	for range 2 {
		err := m.store.UpdateRecord(ctx, user.Name, func(r *Record) error {
			if !r.Account.Equal(user.CreatedAt) {
				*r = Record{User: user.Name, Handle: handle, Account: user.CreatedAt}
			}
			switch {
			case !bytes.Equal(r.Handle, handle):
				return ErrChallenge
			case findPasskey(*r, pk.ID) >= 0:
				return ErrDuplicate
			case len(r.Passkeys) >= m.cfg.MaxPasskeys:
				return ErrTooMany
			}
			r.Passkeys = append(r.Passkeys, pk)
			return nil
		})
		if !errors.Is(err, nmauth.ErrNotFound) {
			return err
		}
		err = m.store.CreateRecord(ctx, Record{User: user.Name, Handle: handle, Account: user.CreatedAt, Passkeys: []Passkey{pk}})
		if !errors.Is(err, nmauth.ErrExists) {
			return err
		}
		// Another registration created the record meanwhile: add to it.
	}
	return ErrChallenge
}

// checkName trims a passkey's name and refuses an empty, long or
// unprintable one.
func checkName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" || !utf8.ValidString(name) || utf8.RuneCountInString(name) > maxNameLen ||
		strings.ContainsFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return "", ErrName
	}
	return name, nil
}

// Passkeys lists the passkeys of the user named username, oldest first, on
// behalf of p: the user or the master key.
func (m *Manager) Passkeys(ctx context.Context, p nmauth.Principal, username string) ([]Info, error) {
	_, rec, err := m.owner(ctx, p, username, true)
	if err != nil {
		return nil, err
	}
	return infos(rec), nil
}

func infos(rec Record) []Info {
	out := make([]Info, len(rec.Passkeys))
	for i, pk := range rec.Passkeys {
		out[i] = info(pk)
	}
	return out
}

// ListPasskeys lists the passkeys of the user named username in s, as
// [Manager.Passkeys] does, for an administrator's tool that has no relying
// party to run ceremonies for (nmauthd's "user passkeys"). The caller
// checks that the administrator may.
func ListPasskeys(ctx context.Context, ext *nmauth.Extension, s Store, username string) ([]Info, error) {
	m, err := adminManager(ext, s)
	if err != nil {
		return nil, err
	}
	_, rec, err := m.account(ctx, username)
	if err != nil {
		return nil, err
	}
	return infos(rec), nil
}

// Remove removes the passkey whose id, in base64url, is id from the user
// named username, on behalf of p: the user or the master key. Removing the
// user's last second factor (the last passkey, with TOTP off) needs the
// master key or a login that passed a second factor within
// [Config.PresenceWindow] ([ErrPresence]). A passkey the user does not have
// is [ErrNoPasskey]. The user's tokens are left alone.
func (m *Manager) Remove(ctx context.Context, p nmauth.Principal, username, id string) error {
	user, _, err := m.owner(ctx, p, username, true)
	if err != nil {
		return err
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(id)
	if err != nil {
		return ErrNoPasskey
	}
	err = m.store.UpdateRecord(ctx, user.Name, func(r *Record) error {
		i := findPasskey(live(*r, user), raw)
		switch {
		case i < 0:
			return ErrNoPasskey
		case len(r.Passkeys) == 1 && !user.TOTPEnabled && p.Kind != nmauth.KindMaster && !m.recentPresence(p):
			return ErrPresence
		}
		r.Passkeys = slices.Delete(r.Passkeys, i, i+1)
		return nil
	})
	if errors.Is(err, nmauth.ErrNotFound) {
		return ErrNoPasskey
	}
	if err != nil {
		return err
	}
	m.ext.Emit(ctx, nmauth.Event{Type: EventRemoved, Kind: nmauth.KindUser, Name: user.Name})
	return nil
}

// Reset removes every passkey of the user named username and revokes the
// user's tokens, for an administrator whose user lost an authenticator:
// the user logs in again with the password alone (or TOTP, if on) and
// registers anew. It returns how many passkeys it removed. The caller
// checks that the administrator may; the handler's route takes the master
// key only.
func (m *Manager) Reset(ctx context.Context, username string) (int, error) {
	user, rec, err := m.account(ctx, username)
	if err != nil {
		return 0, err
	}
	if err := m.store.DeleteRecord(ctx, user.Name); err != nil {
		return 0, err
	}
	if err := m.auth.Admin().RevokeUserTokens(ctx, user.Name); err != nil {
		return 0, err
	}
	m.ext.Emit(ctx, nmauth.Event{Type: EventReset, Kind: nmauth.KindUser, Name: user.Name})
	return len(rec.Passkeys), nil
}

// ResetPasskeys is [Manager.Reset] for an administrator's tool that has no
// relying party to run ceremonies for (nmauthd's "user passkeys-reset").
func ResetPasskeys(ctx context.Context, ext *nmauth.Extension, s Store, username string) (int, error) {
	m, err := adminManager(ext, s)
	if err != nil {
		return 0, err
	}
	return m.Reset(ctx, username)
}

// adminManager is a Manager for the administration of stored passkeys
// only: it has no relying party and runs no ceremony. ext must be
// registered.
func adminManager(ext *nmauth.Extension, s Store) (*Manager, error) {
	if ext.Authenticator() == nil {
		return nil, fmt.Errorf("passkey: %w", nmauth.ErrNotRegistered)
	}
	cfg := storeOnly(s)
	cfg.Extension = ext
	return newManager(cfg, nil), nil
}

// storeOnly is the Config, with its defaults, of a Manager over s that
// runs no ceremony.
func storeOnly(s Store) Config {
	cfg := Config{Store: s}
	cfg.setDefaults()
	return cfg
}
