// This file holds the SQLStore's broken records: the errors of a row
// whose cells do not decode, in which a column of the wrong type breaks
// that column of that record alone, the scan for them, and their repair.
// The decoding of cells is internal/sqlcol's; the scan's batches and the
// repairs' statements are internal/sqlrepair's.

package nmauth

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/nmauth/nmauth/internal/sqlcol"
	"github.com/nmauth/nmauth/internal/sqldb"
	"github.com/nmauth/nmauth/internal/sqlrepair"
)

// BrokenRecords implements [RepairStore]. A batch is one keyset page of
// one table, read as a listing reads it, so that the scan finds exactly
// the columns that reads find broken: every column of the wrong type, and
// every JSON column that does not decode. The position of the next batch
// is the kind of record and the last key read, as "kind:key"; "kind:"
// starts a table.
func (s *SQLStore) BrokenRecords(ctx context.Context, after string, limit int) ([]*BrokenRecordError, string, error) {
	broken, next, err := sqlrepair.Scan(ctx, []sqlrepair.Kind{
		{Name: "user", Page: s.users.BrokenPage},
		{Name: "host", Page: s.hosts.BrokenPage},
		{Name: "access token", Page: s.tokens.BrokenPage},
	}, after, limit)
	var found []*BrokenRecordError
	for _, err := range broken {
		found = append(found, brokenColumns(err)...)
	}
	return found, next, err
}

// sqlRepairs are the repairs of the columns of users and hosts that the
// store can find broken, by kind and column (see internal/sqlrepair). An
// access token with any broken column is deleted: an unreadable scope
// must never be widened, and the user can make a new one.
var sqlRepairs = sqlrepair.Table(latestTOTPStep)

// latestTOTPStep is the latest step a code is checked against now (see
// otpauth.Match).
func latestTOTPStep() int64 { return time.Now().Unix()/totpPeriod + 1 }

// errNotRepairable is the reason a repair of a column the store does not
// know fails.
var errNotRepairable = errors.New("not a column this store repairs")

// RepairRecord implements [RepairStore]. The record is read again under
// its row's lock, so a column repaired or rewritten since b was found is
// left alone.
func (s *SQLStore) RepairRecord(ctx context.Context, b *BrokenRecordError) error {
	const what = "repair record"
	r, ok := sqlRepairs[b.Kind][b.Column]
	switch {
	case b.Kind == "user" && ok:
		return s.users.Repair(ctx, what, b.Key, func(u User) bool { return slices.Contains(u.Broken, b.Column) }, r.Query, r.Args)
	case b.Kind == "host" && ok:
		return s.hosts.Repair(ctx, what, b.Key, func(h Host) bool { return slices.Contains(h.Broken, b.Column) }, r.Query, r.Args)
	case b.Kind == "access token" && slices.Contains(sqlAccessTokens.Columns[1:], b.Column):
		return s.tokens.Repair(ctx, what, b.Key, func(t AccessToken) bool { return slices.Contains(t.Broken, b.Column) },
			"DELETE FROM nmauth_access_tokens WHERE id = ?", nil)
	}
	return sqldb.Wrap(what, &BrokenRecordError{Kind: b.Kind, Key: b.Key, Column: b.Column, Err: errNotRepairable})
}

// brokenErr is nil for a row of a record of kind that d read soundly, the
// *BrokenRecordError of its one broken column, or a *sqlcol.RowError of
// the *BrokenRecordError of each of its several.
func brokenErr(kind string, d *sqlcol.Decoder) error {
	if len(d.Errs) == 0 {
		return nil
	}
	all := make([]error, len(d.Errs))
	for i, err := range d.Errs {
		all[i] = &BrokenRecordError{Kind: kind, Key: d.Key, Column: d.Broken[i], Err: err}
	}
	if len(all) == 1 {
		return all[0]
	}
	return &sqlcol.RowError{Columns: d.Broken, Errs: all}
}

// brokenColumns returns the error of each broken column of the record
// whose scan returned err.
func brokenColumns(err error) []*BrokenRecordError {
	var row *sqlcol.RowError
	if errors.As(err, &row) {
		all := make([]*BrokenRecordError, len(row.Errs))
		for i, err := range row.Errs {
			all[i] = err.(*BrokenRecordError)
		}
		return all
	}
	var one *BrokenRecordError
	if errors.As(err, &one) {
		return []*BrokenRecordError{one}
	}
	return nil
}
