package nmauth

import (
	"context"
	"strings"
)

// HostLoginStore is implemented by a [Store] that reads what a host login
// needs more cheaply than [Store.GetHost] does; [SQLStore] does. A host
// login reads through it when the Store has it, else through GetHost.
type HostLoginStore interface {
	// GetHostLogin returns the host's record as GetHost does, with only
	// what a login reads: ID, MACAddress, PasswordHash, Disabled and
	// State. CreatedAt and Broken are left zero; a record it cannot
	// decode returns a [*BrokenRecordError], as GetHost's does.
	GetHostLogin(ctx context.Context, id string) (Host, error)
}

var _ HostLoginStore = (*SQLStore)(nil)

// sqlHostLoginColumns are the columns a host login reads.
var sqlHostLoginColumns = []string{
	"mac_address", "password_hash", "disabled",
	"password_failures", "password_blocked_until", "password_clients", "generation",
}

// hostLoginSQL is the statement of GetHostLogin.
func hostLoginSQL(q sqlQueries) string {
	return q.rebind("SELECT " + strings.Join(sqlHostLoginColumns, ", ") + " FROM nmauth_hosts WHERE id = ?")
}

// GetHostLogin implements [HostLoginStore] with one prepared statement of
// the columns a login reads. An empty list of client failures is not
// decoded.
func (s *SQLStore) GetHostLogin(ctx context.Context, id string) (Host, error) {
	h := Host{ID: id}
	var clients string
	var pwBlocked, gen int64
	err := s.getHostLogin.QueryRowContext(ctx, id).Scan(&h.MACAddress, &h.PasswordHash, &h.Disabled,
		&h.State.v.PasswordFailures, &pwBlocked, &clients, &gen)
	if err != nil {
		return Host{}, readErr("get host login", err)
	}
	if clients != "[]" {
		d := columnDecoder{kind: "host", key: id}
		decodeColumn(&d, "password_clients", clients, &h.State.v.PasswordClients)
		if err := d.err(); err != nil {
			return Host{}, err
		}
	}
	h.State.v.PasswordBlockedUntil = decodeTime(pwBlocked)
	h.State.v.Generation = uint64(gen)
	return h, nil
}

// getHostLogin reads a host for its login: through [HostLoginStore] when
// the Store has it, else through GetHost, under the guard's deadline.
func (s *guardedStore) getHostLogin(ctx context.Context, id string) (h Host, err error) {
	lean, ok := s.Store.(HostLoginStore)
	if !ok {
		return s.GetHost(ctx, id)
	}
	err = s.call(ctx, "get host", func(ctx context.Context) error {
		got, err := lean.GetHostLogin(ctx, id)
		if err == nil {
			h = got
		}
		return err
	}, contractError)
	return h, err
}
