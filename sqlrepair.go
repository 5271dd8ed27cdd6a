// This file holds the SQLStore's scan for broken records and their
// repair, whose statements are internal/sqlrepair's.

package nmauth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nmauth/nmauth/internal/sqldb"
	"github.com/nmauth/nmauth/internal/sqlrepair"
)

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
		return nil, "", sqldb.Wrap("broken records", errRepairLimit)
	}
	var (
		n      int
		last   string
		broken []error
		err    error
	)
	switch kind {
	case "user":
		n, last, broken, err = s.users.BrokenPage(ctx, s.users.PageQuery(), key, limit)
	case "host":
		n, last, broken, err = s.hosts.BrokenPage(ctx, s.hosts.PageQuery(), key, limit)
	case "access token":
		n, last, broken, err = s.tokens.BrokenPage(ctx, s.tokens.Select("WHERE id > ? ORDER BY id LIMIT ?"), key, limit)
	default:
		return nil, "", sqldb.Wrap("broken records", fmt.Errorf("%w: %q", errRepairPosition, after))
	}
	if err != nil {
		return nil, "", sqldb.Wrap("broken records", err)
	}
	var found []*BrokenRecordError
	for _, err := range broken {
		found = append(found, brokenColumns(err)...)
	}
	if n == limit {
		return found, kind + ":" + last, nil
	}
	// This table is done: the next batch starts the next one, or the
	// scan is over.
	if i := slices.Index(sqlRepairKinds, kind); i+1 < len(sqlRepairKinds) {
		return found, sqlRepairKinds[i+1] + ":", nil
	}
	return found, "", nil
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
	const what = "repair record"
	repair, ok := sqlRepairs[b.Kind][b.Column]
	switch {
	case b.Kind == "user" && ok:
		return s.users.Repair(ctx, what, b.Key, func(u User) bool { return slices.Contains(u.Broken, b.Column) }, repair.Query, repair.Args)
	case b.Kind == "host" && ok:
		return s.hosts.Repair(ctx, what, b.Key, func(h Host) bool { return slices.Contains(h.Broken, b.Column) }, repair.Query, repair.Args)
	case b.Kind == "access token" && slices.Contains(sqlAccessTokens.Columns[1:], b.Column):
		return s.tokens.Repair(ctx, what, b.Key, func(t AccessToken) bool { return slices.Contains(t.Broken, b.Column) },
			"DELETE FROM nmauth_access_tokens WHERE id = ?", nil)
	}
	return sqldb.Wrap(what, &BrokenRecordError{Kind: b.Kind, Key: b.Key, Column: b.Column, Err: errNotRepairable})
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
