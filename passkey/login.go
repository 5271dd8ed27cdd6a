package passkey

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/nmauth/nmauth"
)

// BeginSecondFactor starts a passkey assertion as the second factor of a
// password login: preAuthToken is the pre-auth token that
// [nmauth.Authenticator.LoginUser] returned for the user named username,
// and must still stand ([nmauth.Extension.CheckPreAuth]), so that only
// who knows the password learns which passkeys the user has. A user
// without a passkey is [ErrNoPasskey]. It returns the options for
// navigator.credentials.get, in the JSON form that
// PublicKeyCredential.parseRequestOptionsFromJSON reads.
func (m *Manager) BeginSecondFactor(ctx context.Context, preAuthToken, username string) (*protocol.CredentialAssertion, error) {
	name, err := m.ext.CheckPreAuth(ctx, preAuthToken, username)
	if err != nil {
		return nil, err
	}
	user, rec, err := m.account(ctx, name)
	if err != nil {
		return nil, err
	}
	if len(rec.Passkeys) == 0 {
		return nil, ErrNoPasskey
	}
	assertion, session, err := m.web.BeginLogin(webUser{name: user.Name, rec: rec}, webauthn.WithUserVerification(m.userVerification()))
	if err != nil {
		return nil, fmt.Errorf("passkey: begin assertion: %w", err)
	}
	if err := m.putChallenge(ctx, session.Challenge, Challenge{Flow: FlowSecondFactor, User: user.Name}); err != nil {
		return nil, err
	}
	return assertion, nil
}

// FinishSecondFactor checks the browser's answer to a challenge of
// [Manager.BeginSecondFactor], a PublicKeyCredential as JSON, and trades
// preAuthToken for a user token with
// [nmauth.Extension.RedeemPreAuth]: an assertion that fails
// ([ErrAssertion], [ErrSignCount]) counts as a wrong TOTP code does, under
// the same limits and events. A challenge that is not live, or not this
// user's, is [ErrChallenge] and counts nothing, since no assertion was
// checked. Either way the challenge is spent.
func (m *Manager) FinishSecondFactor(ctx context.Context, preAuthToken, username string, body []byte) (nmauth.UserLogin, error) {
	name, err := m.ext.CheckPreAuth(ctx, preAuthToken, username)
	if err != nil {
		return nmauth.UserLogin{}, err
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(body)
	if err != nil {
		return nmauth.UserLogin{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	challenge := parsed.Response.CollectedClientData.Challenge
	if _, err := m.takeChallenge(ctx, challenge, FlowSecondFactor, name); err != nil {
		return nmauth.UserLogin{}, err
	}
	user, rec, err := m.account(ctx, name)
	if err != nil {
		return nmauth.UserLogin{}, err
	}
	proof := m.verify(ctx, user, rec, parsed, challenge, m.userVerification())
	if proof != nil && !errors.Is(proof, ErrAssertion) && !errors.Is(proof, ErrSignCount) {
		return nmauth.UserLogin{}, proof // a fault, not the user's failure
	}
	return m.ext.RedeemPreAuth(ctx, preAuthToken, name, proof)
}

// BeginLogin starts a passwordless login ([Config.Passwordless]): the
// options for navigator.credentials.get with no passkeys named, so that
// the authenticator offers its discoverable ones, and user verification
// required.
func (m *Manager) BeginLogin(ctx context.Context) (*protocol.CredentialAssertion, error) {
	if !m.cfg.Passwordless {
		return nil, ErrPasswordlessOff
	}
	// The target of a flood: refused before any work while it has no room.
	if m.refusing(FlowPasswordless, m.now()) {
		return nil, ErrChallengesFull
	}
	assertion, session, err := m.web.BeginDiscoverableLogin(webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		return nil, fmt.Errorf("passkey: begin passwordless login: %w", err)
	}
	if err := m.putChallenge(ctx, session.Challenge, Challenge{Flow: FlowPasswordless}); err != nil {
		return nil, err
	}
	return assertion, nil
}

// FinishLogin checks the browser's answer to a challenge of
// [Manager.BeginLogin] and logs its user in with
// [nmauth.Extension.LoginVerified], as having passed a second factor:
// a discoverable passkey with user verification is both. The user is
// found by the user handle the passkey returns; an assertion without one,
// or of a passkey nobody has, or that fails verification (user
// verification included) is [ErrAssertion] and emits [EventRefused] when
// its user is known. A disabled user is [nmauth.ErrInvalidCredentials].
func (m *Manager) FinishLogin(ctx context.Context, body []byte) (nmauth.UserLogin, error) {
	if !m.cfg.Passwordless {
		return nmauth.UserLogin{}, ErrPasswordlessOff
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(body)
	if err != nil {
		return nmauth.UserLogin{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	challenge := parsed.Response.CollectedClientData.Challenge
	if _, err := m.takeChallenge(ctx, challenge, FlowPasswordless, ""); err != nil {
		return nmauth.UserLogin{}, err
	}
	user, rec, err := m.holder(ctx, parsed.Response.UserHandle)
	if err != nil {
		return nmauth.UserLogin{}, err
	}
	if err := m.verify(ctx, user, rec, parsed, challenge, protocol.VerificationRequired); err != nil {
		if errors.Is(err, ErrAssertion) || errors.Is(err, ErrSignCount) {
			m.ext.Emit(ctx, nmauth.Event{Type: EventRefused, Kind: nmauth.KindUser, Name: user.Name})
		}
		return nmauth.UserLogin{}, err
	}
	return m.ext.LoginVerified(ctx, user.Name)
}

// holder finds the user whose record has the user handle a passkey
// returned, and the user's live passkeys; [ErrAssertion] for none.
func (m *Manager) holder(ctx context.Context, handle []byte) (nmauth.UserInfo, Record, error) {
	if len(handle) == 0 {
		return nmauth.UserInfo{}, Record{}, fmt.Errorf("%w: no user handle", ErrAssertion)
	}
	rec, err := m.store.RecordByHandle(ctx, handle)
	if errors.Is(err, nmauth.ErrNotFound) {
		return nmauth.UserInfo{}, Record{}, fmt.Errorf("%w: unknown user handle", ErrAssertion)
	}
	if err != nil {
		return nmauth.UserInfo{}, Record{}, err
	}
	user, err := m.auth.Admin().LookupUser(ctx, rec.User)
	if errors.Is(err, nmauth.ErrNotFound) {
		return nmauth.UserInfo{}, Record{}, fmt.Errorf("%w: the user is gone", ErrAssertion)
	}
	if err != nil {
		return nmauth.UserInfo{}, Record{}, err
	}
	return user, live(rec, user), nil
}

// verify checks an assertion against the user's live passkeys, with user
// verification uv, and records its use (see recordUse). It returns nil,
// [ErrAssertion] or [ErrSignCount] for the assertion, and other errors for
// faults of the Store. A sign count that went backwards emits
// [EventSignCountRegressed] and changes nothing.
func (m *Manager) verify(ctx context.Context, user nmauth.UserInfo, rec Record, parsed *protocol.ParsedCredentialAssertionData,
	challenge string, uv protocol.UserVerificationRequirement) error {
	if len(rec.Passkeys) == 0 {
		return fmt.Errorf("%w: the user has no passkey", ErrAssertion)
	}
	session := webauthn.SessionData{Challenge: challenge, RelyingPartyID: m.cfg.RPID, UserID: rec.Handle, UserVerification: uv}
	cred, err := m.web.ValidateLogin(webUser{name: user.Name, rec: rec}, session, parsed)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrAssertion, err)
	}
	err = ErrSignCount
	if !cred.Authenticator.CloneWarning {
		err = m.recordUse(ctx, user, cred)
	}
	if errors.Is(err, ErrSignCount) {
		m.cfg.Logger.Warn("passkey refused: its sign count went backwards", "user", user.Name)
		m.ext.Emit(ctx, nmauth.Event{Type: EventSignCountRegressed, Kind: nmauth.KindUser, Name: user.Name})
	}
	return err
}

// recordUse stores the sign count, backup state and last use of the
// passkey an assertion verified, in one atomic update that refuses a count
// that did not go up since, should a concurrent login have moved it.
func (m *Manager) recordUse(ctx context.Context, user nmauth.UserInfo, cred *webauthn.Credential) error {
	now := m.now()
	err := m.store.UpdateRecord(ctx, user.Name, func(r *Record) error {
		i := findPasskey(live(*r, user), cred.ID)
		if i < 0 {
			return fmt.Errorf("%w: the passkey was removed meanwhile", ErrAssertion)
		}
		pk := &r.Passkeys[i]
		if regressed(pk.SignCount, cred.Authenticator.SignCount) {
			return ErrSignCount
		}
		pk.SignCount, pk.BackupState, pk.LastUsedAt = cred.Authenticator.SignCount, cred.Flags.BackupState, now
		return nil
	})
	if errors.Is(err, nmauth.ErrNotFound) {
		return fmt.Errorf("%w: the passkeys were reset meanwhile", ErrAssertion)
	}
	return err
}

// regressed reports whether an assertion's sign count got is no advance on
// the stored one: WebAuthn's sign of a cloned authenticator, unless both
// are zero, as for an authenticator that keeps no counter.
func regressed(stored, got uint32) bool {
	return got <= stored && (got != 0 || stored != 0)
}
