package nmauth

import (
	"context"
	"log/slog"
	"net/netip"
	"time"
)

// EventType names an audit event.
type EventType string

// The audit events passed to [Config.OnEvent].
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
)

// Event is one audit record. It never holds a secret.
type Event struct {
	Type EventType
	Time time.Time
	Kind PrincipalKind
	// Name is the user, host or node concerned; "master" for the master
	// key. For a failed login it is the name as sent, bounded in length.
	Name string
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
	if e.Type == EventRecoveryCodeUsed || e.Type == EventTOTPEnabled {
		attrs = append(attrs, slog.Int("remaining", e.Remaining))
	}
	return slog.GroupValue(attrs...)
}

// emit passes e to [Config.OnEvent] with the context of the call that
// caused it, naming the client that context names.
func (a *Authenticator) emit(ctx context.Context, e Event) {
	if a.cfg.OnEvent == nil {
		return
	}
	e.Time = a.now()
	e.Client, _ = ctx.Value(clientAddrKey{}).(netip.Addr)
	a.cfg.OnEvent(ctx, e)
}
