package sqlmigrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ConnectSQLite opens a first connection to a SQLite database, trying
// again while SQLite answers SQLITE_BUSY, for up to wait or until ctx
// ends. The journal_mode(WAL) of nmauth's SQLiteDSN turns a new file to
// WAL on the first connection that opens it, in a read transaction that
// SQLite then upgrades to a write, and an upgrade that meets another
// writer fails at once, without the busy timeout: of several processes
// that start on a new file at once, all but one could see their first
// connection refused. Once the file is in WAL, opening a connection
// writes nothing and waits for the others as usual.
func ConnectSQLite(ctx context.Context, db *sql.DB, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	pause := time.Millisecond
	var busy error
	for {
		c, err := db.Conn(ctx)
		if err == nil {
			return c.Close()
		}
		if busy != nil && ctx.Err() != nil {
			// ctx ended while another try was under way.
			return fmt.Errorf("%w, after %w", ctx.Err(), busy)
		}
		if !sqliteBusy(err) || time.Now().After(deadline) {
			return err
		}
		busy = err
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w, after %w", ctx.Err(), err)
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// sqliteBusy reports whether err is SQLite's SQLITE_BUSY, in any of its
// extended forms, as the Code of modernc.org/sqlite's errors tells it.
func sqliteBusy(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == 5
}
