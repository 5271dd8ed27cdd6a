package nmauth

import (
	"context"
	"log/slog"
	"net/netip"
	"time"

	"github.com/nmauth/nmauth/internal/clientaddr"
)

// EventType names an audit event.
type EventType string

// The audit events passed to [Config.OnEvent], all of them.
const (
	EventLoginSucceeded   EventType = "login.succeeded"
	EventLoginFailed      EventType = "login.failed"
	EventLoginThrottled   EventType = "login.throttled"
	EventClientThrottled  EventType = "client.throttled"
	EventTOTPEnabled      EventType = "totp.enabled"
	EventTOTPVerified     EventType = "totp.verified"
	EventTOTPFailed       EventType = "totp.failed"
	EventTOTPReplayed     EventType = "totp.replayed"
	EventTOTPThrottled    EventType = "totp.throttled"
	EventRecoveryCodeUsed EventType = "totp.recovery_code_used"
	EventMasterKeyUsed    EventType = "masterkey.used"
	EventTokensRevoked    EventType = "tokens.revoked"
	// EventHostMACChanged is a host login with the right password from
	// another MAC address than the host's registered one.
	EventHostMACChanged EventType = "host.mac_changed"
	// EventHostMACRefused is such a login refused by
	// [Config.RefuseMACChange].
	EventHostMACRefused EventType = "host.mac_refused"
	// EventAccessTokenCreated and EventAccessTokenRevoked name the user
	// whose access token was made or revoked (all of them, for
	// [Authenticator.DeleteAccessTokens]).
	EventAccessTokenCreated EventType = "access_token.created"
	EventAccessTokenRevoked EventType = "access_token.revoked"
	// EventLoggedOut is a token revoked by [Authenticator.Logout].
	EventLoggedOut EventType = "logout"
	// EventLoginSecondFactorRequired is a user's right first factor (a
	// password, or a proof given to [Extension.Login]) that
	// earned a pre-auth token, not a login: the second factor is still to
	// come, and its own event says how it went.
	EventLoginSecondFactorRequired EventType = "login.second_factor_required"
	// EventHostJoined is a host that joined with an enrollment key
	// ([Authenticator.JoinHost]); TokenID is the key's id.
	EventHostJoined EventType = "host.joined"

	// The events of a second factor that the application checked itself
	// and traded with [Extension.RedeemPreAuth]. They stand beside
	// EventTOTPVerified, EventTOTPFailed and EventTOTPThrottled, and
	// count against the same backoff.
	EventSecondFactorPassed    EventType = "second_factor.passed"
	EventSecondFactorFailed    EventType = "second_factor.failed"
	EventSecondFactorThrottled EventType = "second_factor.throttled"

	// The events of administrative changes to an account. Each names the
	// account in Kind and Name and who made the change in ActorKind and
	// Actor. A change that revokes the account's tokens also emits
	// EventTokensRevoked.
	EventUserCreated     EventType = "user.created"
	EventUserDisabled    EventType = "user.disabled"
	EventUserEnabled     EventType = "user.enabled"
	EventUserDeleted     EventType = "user.deleted"
	EventUserPasswordSet EventType = "user.password_set"
	// EventTOTPReset is [Admin.ResetTOTP]: TOTP turned off by an
	// administrator.
	EventTOTPReset       EventType = "totp.reset"
	EventHostCreated     EventType = "host.created"
	EventHostDisabled    EventType = "host.disabled"
	EventHostEnabled     EventType = "host.enabled"
	EventHostDeleted     EventType = "host.deleted"
	EventHostPasswordSet EventType = "host.password_set"
	// EventEnrollmentKeyCreated, EventEnrollmentKeyRevoked and
	// EventEnrollmentKeyDeleted name the key by its id in TokenID.
	EventEnrollmentKeyCreated EventType = "enrollment_key.created"
	EventEnrollmentKeyRevoked EventType = "enrollment_key.revoked"
	EventEnrollmentKeyDeleted EventType = "enrollment_key.deleted"
	// EventRecordRepaired is a broken record repaired by
	// [Admin.RepairRecords]; Kind and Name name the account.
	EventRecordRepaired EventType = "record.repaired"
)

// Event is one audit record. It never holds a secret.
type Event struct {
	Type EventType
	Time time.Time
	Kind PrincipalKind
	// Name is the user, host or node concerned; "master" for the master
	// key. For a failed login it is the name as sent, bounded in length.
	Name string
	// ActorKind and Actor say who caused the event: the principal a
	// method was given to act for (as [Authenticator.CreateAccessToken]
	// is), else the one the context of the call holds (the request's
	// bearer, which [Authenticator.Middleware] puts there, else the one
	// [WithActor] names), such as
	// the master key (KindMaster, Actor "") or an administrator's user
	// token (KindUser and the user's name). ActorKind is empty when there
	// is none, as for a login.
	ActorKind PrincipalKind
	Actor     string
	// TokenID is the id of the access token made or revoked, for
	// [EventAccessTokenCreated] and [EventAccessTokenRevoked] of one
	// token, and of the enrollment key of an enrollment-key event and of
	// [EventHostJoined].
	TokenID string
	// Remaining is the number of recovery codes left, for
	// EventRecoveryCodeUsed and EventTOTPEnabled.
	Remaining int
	// Client is the address of the client whose request caused the
	// event, as [Authenticator.Handler], [Authenticator.Limit] and
	// [Authenticator.Middleware] name it (an IPv6 client by the first
	// address of its /64), or as the caller named it with
	// [WithClientAddr]. It is the zero Addr for an event that no request
	// named a client for, such as a revocation by an admin command.
	Client netip.Addr
}

// LogValue makes an Event print as a group of its fields in slog.
func (e Event) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("type", string(e.Type)),
		slog.String("kind", string(e.Kind)),
		slog.String("name", e.Name),
	}
	if e.Client.IsValid() {
		attrs = append(attrs, slog.String("client", e.Client.String()))
	}
	if e.ActorKind != "" {
		attrs = append(attrs, slog.String("actor_kind", string(e.ActorKind)))
	}
	if e.Actor != "" {
		attrs = append(attrs, slog.String("actor", e.Actor))
	}
	if e.TokenID != "" {
		attrs = append(attrs, slog.String("token_id", e.TokenID))
	}
	if e.Type == EventRecoveryCodeUsed || e.Type == EventTOTPEnabled {
		attrs = append(attrs, slog.Int("remaining", e.Remaining))
	}
	return slog.GroupValue(attrs...)
}

// actorKey is the context key of the actor that [WithActor] names.
type actorKey struct{}

// WithActor returns a copy of ctx that names p as the actor of the audit
// events of the calls made with it, such as an administrator's command run
// outside any request (nmauthd's admin commands act as the master key). It
// names only: it is no credential, and [FromContext], [Authenticator.Require]
// and every check ignore it.
func WithActor(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, actorKey{}, &p)
}

// emit passes e to [Config.OnEvent] with the context of the call that
// caused it, naming the client and the principal that context names.
func (a *Authenticator) emit(ctx context.Context, e Event) {
	if a.cfg.OnEvent == nil {
		return
	}
	e.Time = a.now()
	e.Client, _ = clientaddr.FromContext(ctx)
	if p, ok := actorOf(ctx); ok && e.ActorKind == "" {
		e.ActorKind, e.Actor = p.Kind, p.Name
	}
	a.cfg.OnEvent(ctx, e)
}

// audit emits the event of an administrative change to the account kind
// and name once the change has been made: when err is nil and event is
// not "".
func (a *Authenticator) audit(ctx context.Context, err error, event EventType, kind PrincipalKind, name string) {
	if err == nil && event != "" {
		a.emit(ctx, Event{Type: event, Kind: kind, Name: name})
	}
}
