package nmauth

import (
	"context"
	"fmt"
)

// repairBatch is how many records a scan for broken records reads under
// one store deadline.
const repairBatch = 1000

// BrokenRecords lists the records the Store holds but cannot decode, one
// entry per broken column. Such a record answers 500 for its own account
// only; see [Store]. The Store is read a batch at a time, each batch under
// [Config.StoreTimeout], so that a scan of any size ends.
func (ad *Admin) BrokenRecords(ctx context.Context) ([]*BrokenRecordError, error) {
	a := ad.a
	rs, ok := a.store.(*guardedStore).Store.(RepairStore)
	if !ok {
		return nil, ErrRepairUnsupported
	}
	var broken []*BrokenRecordError
	at := ""
	for {
		found, next, err := a.brokenBatch(ctx, rs, at)
		if err != nil {
			return nil, fmt.Errorf("%w: broken records: %w", ErrStoreUnavailable, err)
		}
		broken = append(broken, found...)
		if next == "" {
			return broken, nil
		}
		at = next
	}
}

// brokenBatch reads one batch of a scan under a store deadline of its own.
func (a *Authenticator) brokenBatch(ctx context.Context, rs RepairStore, at string) ([]*BrokenRecordError, string, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.StoreTimeout)
	defer cancel()
	return rs.BrokenRecords(ctx, at, repairBatch)
}

// RepairRecords finds the broken records and resets each broken column
// to a safe value (see [RepairStore.RepairRecord]), with an
// [EventRecordRepaired] for each. It returns what it repaired; on an
// error, what it repaired before it.
func (ad *Admin) RepairRecords(ctx context.Context) ([]*BrokenRecordError, error) {
	a := ad.a
	broken, err := ad.BrokenRecords(ctx)
	if err != nil {
		return nil, err
	}
	// BrokenRecords answered, so the Store is a RepairStore.
	rs := a.store.(*guardedStore).Store.(RepairStore)
	for i, b := range broken {
		if err := a.repairRecord(ctx, rs, b); err != nil {
			return broken[:i], err
		}
		kind := PrincipalKind(b.Kind)
		if b.Kind == "access token" {
			kind = KindAccessToken
		}
		// A repair may move a generation or delete a token: this
		// replica reads the Store again at once.
		a.forget(kind, b.Key)
		a.emit(ctx, Event{Type: EventRecordRepaired, Kind: kind, Name: b.Key})
		a.log.Warn("broken record repaired", "kind", b.Kind, "name", b.Key, "column", b.Column)
	}
	return broken, nil
}

func (a *Authenticator) repairRecord(ctx context.Context, rs RepairStore, b *BrokenRecordError) error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.StoreTimeout)
	defer cancel()
	if err := rs.RepairRecord(ctx, b); err != nil {
		return fmt.Errorf("%w: repair %s %q: %w", ErrStoreUnavailable, b.Kind, b.Key, err)
	}
	return nil
}
