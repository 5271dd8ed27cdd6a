package nmauth

import (
	"context"
	"database/sql"
	"errors"

	"github.com/nmauth/nmauth/internal/state"
)

var _ RepairStore = (*SQLStore)(nil)

// sqlRepairable is what the SQL store knows how to repair: each JSON
// column of each table, the key of its table, and the statement that
// makes it safe. A broken list of client failures or of recovery codes
// is emptied: the failures are forgotten, the codes are gone and must be
// made again. A broken list of logged-out tokens is emptied and the
// user's generation moves, so every token of the user dies, those the
// list revoked among them. An access token whose networks are broken is
// deleted, since an empty list would widen it to every network.
var sqlRepairable = []struct {
	kind, table, key, column, repair string
	// check decodes the column as the store reads it.
	check func(string) error
}{
	{"user", "nmauth_users", "name", "recovery_codes", "UPDATE nmauth_users SET recovery_codes = '[]' WHERE name = ?", checkList[string]},
	{"user", "nmauth_users", "name", "password_clients", "UPDATE nmauth_users SET password_clients = '[]' WHERE name = ?", checkList[state.Client]},
	{"user", "nmauth_users", "name", "logged_out", "UPDATE nmauth_users SET logged_out = '[]', generation = generation + 1 WHERE name = ?", checkList[state.LoggedOut]},
	{"host", "nmauth_hosts", "id", "password_clients", "UPDATE nmauth_hosts SET password_clients = '[]' WHERE id = ?", checkList[state.Client]},
	{"access token", "nmauth_access_tokens", "id", "networks", "DELETE FROM nmauth_access_tokens WHERE id = ?", checkList[string]},
}

// errNotRepairable is the reason a repair of a column the store does not
// know fails.
var errNotRepairable = errors.New("not a column this store repairs")

// BrokenRecords implements [RepairStore]. It reads only the keys and the
// JSON columns, a table at a time.
func (s *SQLStore) BrokenRecords(ctx context.Context) ([]*BrokenRecordError, error) {
	var out []*BrokenRecordError
	for _, c := range sqlRepairable {
		rows, err := s.db.QueryContext(ctx, "SELECT "+c.key+", "+c.column+" FROM "+c.table+" ORDER BY "+c.key)
		if err != nil {
			return nil, wrapSQL("broken records", err)
		}
		for rows.Next() {
			var key, value string
			if err := rows.Scan(&key, &value); err != nil {
				rows.Close()
				return nil, wrapSQL("broken records", err)
			}
			if err := c.check(value); err != nil {
				out = append(out, &BrokenRecordError{Kind: c.kind, Key: key, Column: c.column, Err: err})
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, wrapSQL("broken records", err)
		}
	}
	return out, nil
}

// RepairRecord implements [RepairStore]. The column is read again under
// the row's lock, so a record repaired or rewritten since b was found is
// left alone.
func (s *SQLStore) RepairRecord(ctx context.Context, b *BrokenRecordError) error {
	for _, c := range sqlRepairable {
		if c.kind != b.Kind || c.column != b.Column {
			continue
		}
		lock := "SELECT " + c.column + " FROM " + c.table + " WHERE " + c.key + " = ?"
		if s.dialect == DialectPostgres {
			lock += " FOR UPDATE"
		}
		return s.inTx(ctx, "repair record", func(tx *sql.Tx) error {
			var value string
			err := tx.QueryRowContext(ctx, s.q.rebind(lock), b.Key).Scan(&value)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				return nil
			case err != nil:
				return wrapSQL("repair record", err)
			case c.check(value) == nil:
				return nil
			}
			_, err = tx.ExecContext(ctx, s.q.rebind(c.repair), b.Key)
			return wrapSQL("repair record", err)
		})
	}
	return wrapSQL("repair record", &BrokenRecordError{Kind: b.Kind, Key: b.Key, Column: b.Column, Err: errNotRepairable})
}

// checkList reports whether s decodes as a list column of T.
func checkList[T any](s string) error {
	_, err := decodeList[T](s)
	return err
}
