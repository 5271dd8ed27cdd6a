// This file holds the SQLStore's hosts: the Store methods on
// nmauth_hosts, the lean read of a host login, the batch of host updates,
// and the mapping of a Host to its row and back.

package nmauth

import (
	"context"

	"github.com/nmauth/nmauth/internal/sqlcol"
	"github.com/nmauth/nmauth/internal/sqldb"
)

// sqlHosts is nmauth_hosts; hostArgs and scanHost follow the order of its
// columns.
var sqlHosts = sqldb.Table[Host]{
	Name: "nmauth_hosts", Noun: "host",
	Columns: []string{
		"id", "mac_address", "password_hash", "disabled",
		"password_failures", "password_blocked_until", "password_clients",
		"generation", "created_at",
	},
	Bind: hostArgs, Scan: scanHost, Key: func(h Host) string { return h.ID },
}

// GetHost implements [Store].
func (s *SQLStore) GetHost(ctx context.Context, id string) (Host, error) { return s.hosts.Get(ctx, id) }

// sqlHostLoginQuery is the statement of GetHostLogin: the columns a host
// login reads.
const sqlHostLoginQuery = "SELECT mac_address, password_hash, disabled, password_failures, " +
	"password_blocked_until, password_clients, generation FROM nmauth_hosts WHERE id = ?"

// GetHostLogin implements [HostLoginStore] with one prepared statement of
// the columns a login reads. An empty list of client failures is not
// decoded.
func (s *SQLStore) GetHostLogin(ctx context.Context, id string) (Host, error) {
	c, err := sqlcol.ScanCells(s.getHostLogin.QueryRowContext(ctx, id), 7) // the columns of sqlHostLoginQuery
	if err != nil {
		return Host{}, s.db.ReadErr("get host login", err)
	}
	h := Host{ID: id}
	d := sqlcol.Decoder{Key: id}
	h.MACAddress = d.Text("mac_address", c[0])
	h.PasswordHash = d.Text("password_hash", c[1])
	h.Disabled = d.Boolean("disabled", c[2])
	h.State.v.PasswordFailures = d.Count("password_failures", c[3])
	h.State.v.PasswordBlockedUntil = d.Time("password_blocked_until", c[4])
	if c[5].V != "[]" {
		sqlcol.DecodeList(&d, "password_clients", c[5], &h.State.v.PasswordClients)
	}
	h.State.v.Generation = uint64(d.Integer("generation", c[6]))
	if err := brokenErr("host", &d); err != nil {
		return Host{}, err
	}
	return h, nil
}

// ListHosts implements [Store] as ListUsers does.
func (s *SQLStore) ListHosts(ctx context.Context, after string, limit int) ([]Host, error) {
	return s.hosts.Page(ctx, after, limit)
}

// CreateHost implements [Store].
func (s *SQLStore) CreateHost(ctx context.Context, h Host) error { return s.hosts.Create(ctx, h) }

// UpdateHost implements [Store]. It runs in one transaction that holds the
// row's write lock from the read to the commit.
func (s *SQLStore) UpdateHost(ctx context.Context, id string, fn func(*Host) error) error {
	return s.hosts.Update(ctx, id, fn)
}

// UpdateHosts implements [HostBatchStore] in one transaction, which locks
// the hosts' rows in the order of their ids, so that two batches on
// PostgreSQL never wait for each other in a circle.
func (s *SQLStore) UpdateHosts(ctx context.Context, updates []HostUpdate) error {
	ids := make([]string, len(updates))
	for i := range updates {
		ids[i] = updates[i].ID
	}
	return s.hosts.UpdateAll(ctx, ids,
		func(i int, h *Host) error { return updates[i].Fn(h) },
		func(i int, err error) { updates[i].Err = err })
}

// DeleteHost implements [Store].
func (s *SQLStore) DeleteHost(ctx context.Context, id string) error { return s.hosts.Delete(ctx, id) }

// hostArgs returns h's column values in the order of sqlHosts.Columns.
func hostArgs(h Host) ([]any, error) {
	var e sqlcol.Encoder
	clients := sqlcol.EncodeListTo(&e, h.State.v.PasswordClients, "client failures")
	times := e.Times(h.State.v.PasswordBlockedUntil, h.CreatedAt)
	if e.Err != nil {
		return nil, e.Err
	}
	return []any{
		h.ID, h.MACAddress, h.PasswordHash, h.Disabled,
		h.State.v.PasswordFailures, times[0], clients,
		int64(h.State.v.Generation), times[1],
	}, nil
}

// scanHost reads the cells of a host's row as scanUser reads a user's.
func scanHost(c []sqlcol.Cell) (Host, error) {
	var h Host
	var d sqlcol.Decoder
	h.ID = d.KeyText(c[0])
	h.MACAddress = d.Text("mac_address", c[1])
	h.PasswordHash = d.Text("password_hash", c[2])
	h.Disabled = d.Boolean("disabled", c[3])
	h.State.v.PasswordFailures = d.Count("password_failures", c[4])
	h.State.v.PasswordBlockedUntil = d.Time("password_blocked_until", c[5])
	sqlcol.DecodeList(&d, "password_clients", c[6], &h.State.v.PasswordClients)
	h.State.v.Generation = uint64(d.Integer("generation", c[7]))
	h.CreatedAt = d.Time("created_at", c[8])
	h.Broken = d.Broken
	return h, brokenErr("host", &d)
}
