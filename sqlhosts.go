// This file holds the SQLStore's hosts: the Store methods on
// nmauth_hosts, the lean read of a host login, the batch of host updates,
// and the encoding of a Host to its row and back.

package nmauth

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"

	"github.com/nmauth/nmauth/internal/sqlcol"
)

// GetHost implements [Store].
func (s *SQLStore) GetHost(ctx context.Context, id string) (Host, error) {
	h, err := scanHost(s.getHost.QueryRowContext(ctx, id))
	if err != nil {
		return Host{}, readErr("get host", err)
	}
	return h, nil
}

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
	c, err := sqlcol.ScanCells(s.getHostLogin.QueryRowContext(ctx, id), len(sqlHostLoginColumns))
	if err != nil {
		return Host{}, readErr("get host login", err)
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
	return listPage(ctx, s.db, "list hosts", s.q.listHosts, after, limit, scanHost)
}

// CreateHost implements [Store].
func (s *SQLStore) CreateHost(ctx context.Context, h Host) error {
	args, err := hostArgs(h)
	if err != nil {
		return err
	}
	return s.insert(ctx, "create host", s.q.insertHost, args)
}

// UpdateHost implements [Store]. It runs in one transaction that holds the
// row's write lock from the read to the commit.
func (s *SQLStore) UpdateHost(ctx context.Context, id string, fn func(*Host) error) error {
	return s.inTx(ctx, "update host", func(tx *sql.Tx) error {
		h, err := scanHost(tx.QueryRowContext(ctx, s.q.lockHost, id))
		if errors.Is(err, sql.ErrNoRows) {
			return s.missWrite(ctx, tx, id)
		}
		if err != nil {
			return readErr("update host", err)
		}
		if err := fn(&h); err != nil {
			return err
		}
		args, err := hostArgs(h)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.q.updateHost, append(args[1:], id)...)
		return wrapSQL("update host", err)
	})
}

// UpdateHosts implements [HostBatchStore] in one transaction, which locks
// the hosts' rows in the order of their ids, so that two batches on
// PostgreSQL never wait for each other in a circle.
func (s *SQLStore) UpdateHosts(ctx context.Context, updates []HostUpdate) error {
	order := make([]int, len(updates))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return strings.Compare(updates[i].ID, updates[j].ID) })
	return s.inTx(ctx, "update hosts", func(tx *sql.Tx) error {
		lock, update := tx.StmtContext(ctx, s.lockHostStmt), tx.StmtContext(ctx, s.updateHostStmt)
		for _, i := range order {
			u := &updates[i]
			h, err := scanHost(lock.QueryRowContext(ctx, u.ID))
			switch {
			case errors.Is(err, sql.ErrNoRows):
				u.Err = ErrNotFound
				continue
			case errors.Is(err, ErrBrokenRecord):
				u.Err = err
				continue
			case err != nil:
				return readErr("update hosts", err)
			}
			if u.Err = u.Fn(&h); u.Err != nil {
				continue
			}
			args, err := hostArgs(h)
			if err != nil {
				u.Err = err
				continue
			}
			if _, err := update.ExecContext(ctx, append(args[1:], u.ID)...); err != nil {
				return wrapSQL("update hosts", err)
			}
		}
		return nil
	})
}

// DeleteHost implements [Store].
func (s *SQLStore) DeleteHost(ctx context.Context, id string) error {
	return s.inTx(ctx, "delete host", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.q.deleteHost, id)
		return wrapSQL("delete host", err)
	})
}

// hostArgs returns h's column values in the order of sqlHostColumns.
func hostArgs(h Host) ([]any, error) {
	clients, err := encodeList(h.State.v.PasswordClients, "client failures")
	if err != nil {
		return nil, err
	}
	times, err := encodeTimes(h.State.v.PasswordBlockedUntil, h.CreatedAt)
	if err != nil {
		return nil, err
	}
	return []any{
		h.ID, h.MACAddress, h.PasswordHash, h.Disabled,
		h.State.v.PasswordFailures, times[0], clients,
		int64(h.State.v.Generation), times[1],
	}, nil
}

// scanHost reads a host's row as scanUser reads a user's.
func scanHost(row sqlcol.RowScanner) (Host, error) {
	c, err := sqlcol.ScanCells(row, len(sqlHostColumns))
	if err != nil {
		return Host{}, err
	}
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
