package nmauth

import (
	"log/slog"
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
}

// LogValue makes an Event print as a group of its fields in slog.
func (e Event) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("type", string(e.Type)),
		slog.String("kind", string(e.Kind)),
		slog.String("name", e.Name),
	}
	if e.Type == EventRecoveryCodeUsed || e.Type == EventTOTPEnabled {
		attrs = append(attrs, slog.Int("remaining", e.Remaining))
	}
	return slog.GroupValue(attrs...)
}

func (a *Authenticator) emit(e Event) {
	if a.cfg.OnEvent == nil {
		return
	}
	e.Time = a.now()
	a.cfg.OnEvent(e)
}
