package nmauth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nmauth/nmauth/internal/sqlcol"
	"github.com/nmauth/nmauth/internal/sqlrepair"
)

var _ RepairStore = (*SQLStore)(nil)

// sqlRepairKinds are the kinds of record a scan for broken records reads,
// in its order: users, then hosts, then access tokens.
var sqlRepairKinds = []string{"user", "host", "access token"}

var (
	// errNotRepairable is the reason a repair of a column the store does
	// not know fails.
	errNotRepairable = errors.New("not a column this store repairs")
	// errRepairPosition is the error of a scan from a position the store
	// did not return.
	errRepairPosition = errors.New("not a position of a scan for broken records")
	// errRepairLimit is the error of a scan of no records at a time.
	errRepairLimit = errors.New("a scan for broken records needs a positive limit")
)

// BrokenRecords implements [RepairStore]. A batch is one keyset page of
// one table, read as a listing reads it, so that the scan finds exactly
// the columns that reads find broken: every column of the wrong type, and
// every JSON column that does not decode. The position of the next batch
// is the kind of record and the last key read, as "kind:key"; "kind:"
// starts a table.
func (s *SQLStore) BrokenRecords(ctx context.Context, after string, limit int) ([]*BrokenRecordError, string, error) {
	kind, key, _ := strings.Cut(after, ":")
	if after == "" {
		kind = sqlRepairKinds[0]
	}
	if limit <= 0 {
		return nil, "", wrapSQL("broken records", errRepairLimit)
	}
	var (
		keys  []string
		found []*BrokenRecordError
		err   error
	)
	switch kind {
	case "user":
		keys, found, err = brokenInPage(ctx, s.db, s.q.listUsers, key, limit, scanUser, func(u User) string { return u.Name })
	case "host":
		keys, found, err = brokenInPage(ctx, s.db, s.q.listHosts, key, limit, scanHost, func(h Host) string { return h.ID })
	case "access token":
		keys, found, err = brokenInPage(ctx, s.db, s.accessQuery("WHERE id > ? ORDER BY id LIMIT ?"), key, limit, scanAccessToken, func(t AccessToken) string { return t.ID })
	default:
		return nil, "", wrapSQL("broken records", fmt.Errorf("%w: %q", errRepairPosition, after))
	}
	if err != nil {
		return nil, "", wrapSQL("broken records", err)
	}
	if len(keys) == limit {
		return found, kind + ":" + keys[len(keys)-1], nil
	}
	// This table is done: the next batch starts the next one, or the
	// scan is over.
	if i := slices.Index(sqlRepairKinds, kind); i+1 < len(sqlRepairKinds) {
		return found, sqlRepairKinds[i+1] + ":", nil
	}
	return found, "", nil
}

// brokenInPage reads the page of query after the key after and returns the
// keys it read and the broken columns of its records.
func brokenInPage[T any](ctx context.Context, db *sql.DB, query, after string, limit int, scan func(sqlcol.RowScanner) (T, error), key func(T) string) ([]string, []*BrokenRecordError, error) {
	rows, err := db.QueryContext(ctx, query, after, limit)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var keys []string
	var found []*BrokenRecordError
	for rows.Next() {
		v, err := scan(rows)
		var b *BrokenRecordError
		switch {
		case errors.As(err, &b):
			found = append(found, brokenColumns(err)...)
		case err != nil:
			return nil, nil, err
		}
		keys = append(keys, key(v))
	}
	return keys, found, rows.Err()
}

// brokenColumns returns the error of each broken column of the record
// whose scan returned err.
func brokenColumns(err error) []*BrokenRecordError {
	var b *brokenRowError
	if errors.As(err, &b) {
		return b.all
	}
	var one *BrokenRecordError
	if errors.As(err, &one) {
		return []*BrokenRecordError{one}
	}
	return nil
}

// sqlRepairs are the repairs of the columns of users and hosts that the
// store can find broken, by kind and column (see internal/sqlrepair). An
// access token with any broken column is deleted: an unreadable scope
// must never be widened, and the user can make a new one.
var sqlRepairs = sqlrepair.Table(latestTOTPStep)

// latestTOTPStep is the latest step a code is checked against now (see
// otpauth.Match).
func latestTOTPStep() int64 { return time.Now().Unix()/totpPeriod + 1 }

// RepairRecord implements [RepairStore]. The record is read again under
// its row's lock, so a column repaired or rewritten since b was found is
// left alone.
func (s *SQLStore) RepairRecord(ctx context.Context, b *BrokenRecordError) error {
	forUpdate := ""
	if s.dialect == DialectPostgres {
		forUpdate = " FOR UPDATE"
	}
	var (
		lock   string
		scan   func(sqlcol.RowScanner) ([]string, error)
		repair sqlrepair.Repair
		ok     bool
	)
	switch b.Kind {
	case "user":
		lock, scan = s.q.lockUser, brokenOf(scanUser, func(u User) []string { return u.Broken })
		repair, ok = sqlRepairs[b.Kind][b.Column]
	case "host":
		lock, scan = s.q.lockHost, brokenOf(scanHost, func(h Host) []string { return h.Broken })
		repair, ok = sqlRepairs[b.Kind][b.Column]
	case "access token":
		lock, scan = s.accessQuery("WHERE id = ?")+forUpdate, brokenOf(scanAccessToken, func(t AccessToken) []string { return t.Broken })
		repair, ok = sqlrepair.Repair{Query: "DELETE FROM nmauth_access_tokens WHERE id = ?"}, slices.Contains(sqlAccessColumns[1:], b.Column)
	}
	if !ok {
		return wrapSQL("repair record", &BrokenRecordError{Kind: b.Kind, Key: b.Key, Column: b.Column, Err: errNotRepairable})
	}
	return s.inTx(ctx, "repair record", func(tx *sql.Tx) error {
		broken, err := scan(tx.QueryRowContext(ctx, lock, b.Key))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return wrapSQL("repair record", err)
		case !slices.Contains(broken, b.Column):
			return nil
		}
		var args []any
		if repair.Args != nil {
			args = repair.Args()
		}
		_, err = tx.ExecContext(ctx, s.q.rebind(repair.Query), append(args, b.Key)...)
		return wrapSQL("repair record", err)
	})
}

// brokenOf turns a scan of a record into a scan of the names of its
// broken columns; a broken record is not an error here.
func brokenOf[T any](scan func(sqlcol.RowScanner) (T, error), broken func(T) []string) func(sqlcol.RowScanner) ([]string, error) {
	return func(row sqlcol.RowScanner) ([]string, error) {
		v, err := scan(row)
		if err != nil && !errors.Is(err, ErrBrokenRecord) {
			return nil, err
		}
		return broken(v), nil
	}
}
