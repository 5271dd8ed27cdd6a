package sqlmigrate

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// codedError is a driver error with a SQLite result code, as
// modernc.org/sqlite's is.
type codedError int

func (e codedError) Error() string { return "sqlite error" }
func (e codedError) Code() int     { return int(e) }

// busyConnector refuses its first busy connections with err.
type busyConnector struct {
	busy  int32
	tries atomic.Int32
	err   error
	onTry func(n int32) // if set, called on each try with its number
}

func (c *busyConnector) Connect(context.Context) (driver.Conn, error) {
	n := c.tries.Add(1)
	if c.onTry != nil {
		c.onTry(n)
	}
	if n <= c.busy {
		return nil, c.err
	}
	return fakeConn{&fakeDB{}}, nil
}

func (c *busyConnector) Driver() driver.Driver { return &fakeDB{} }

// TestConnectSQLite tries again while SQLite answers SQLITE_BUSY, in any
// of its extended forms, and gives up at once on another error, after
// the wait, or when ctx ends.
func TestConnectSQLite(t *testing.T) {
	tests := []struct {
		name  string
		c     *busyConnector
		wait  time.Duration
		ok    bool
		tries int32
	}{
		{"busy, then open", &busyConnector{busy: 3, err: codedError(5)}, time.Second, true, 4},
		{"busy snapshot, then open", &busyConnector{busy: 1, err: codedError(517)}, time.Second, true, 2},
		{"another error", &busyConnector{busy: 1, err: codedError(14)}, time.Second, false, 1},
		{"busy past the wait", &busyConnector{busy: 1 << 30, err: codedError(5)}, 0, false, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db := sql.OpenDB(tc.c)
			defer db.Close()
			err := ConnectSQLite(context.Background(), db, tc.wait)
			if (err == nil) != tc.ok || !tc.ok && !errors.Is(err, tc.c.err) || tc.c.tries.Load() < tc.tries {
				t.Errorf("error %v after %d tries, want ok %v after %d", err, tc.c.tries.Load(), tc.ok, tc.tries)
			}
		})
	}
	// ctx ends during the third try.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := sql.OpenDB(&busyConnector{busy: 1 << 30, err: codedError(5), onTry: func(n int32) {
		if n == 3 {
			cancel()
		}
	}})
	defer db.Close()
	if err := ConnectSQLite(ctx, db, time.Minute); !errors.Is(err, context.Canceled) || !errors.Is(err, codedError(5)) {
		t.Errorf("error %v, want the end of ctx after SQLITE_BUSY", err)
	}
}
