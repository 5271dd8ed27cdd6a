package main

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// lateReadListener wraps the connections a listener accepts in
// lateReadConn, so that a request the client sent in time is read even
// when the server gets round to reading it after its deadline. firstWait,
// when set, is how long a connection may wait before its first byte (see
// lateReadConn).
type lateReadListener struct {
	net.Listener
	firstWait time.Duration
}

func (l lateReadListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c, nil
	}
	lc := &lateReadConn{TCPConn: tc, raw: raw}
	if l.firstWait > 0 {
		lc.firstBy = time.Now().Add(l.firstWait)
	}
	return lc, nil
}

// lateReadConn is a TCP connection whose read deadline bounds the wait for
// bytes the client has not sent yet, not the server's own delay. The HTTP
// server sets a request's header deadline (ReadHeaderTimeout) when it
// starts to read it; on a starved CPU the goroutine may not run again
// until that deadline has passed, and a plain connection then fails the
// read without looking at what the kernel already holds. A read that
// begins after its deadline here takes the bytes that have already
// arrived, without waiting; if none have, it fails with the deadline's
// timeout as before. A slow client is still cut off: once the deadline
// has passed, every read that finds nothing waiting ends the request.
//
// A deadline that had already passed when it was set bounds no wait: it
// stops a read, as the HTTP server stops its read between requests, and
// a read under it fails at once, as on a plain connection.
//
// Until its first byte, a connection is idle, not slow: a client may
// open one before it has a request to send (Go's HTTP client does, when
// a request finds no free connection, and keeps it for the next), as it
// keeps one open between requests. The server's header deadline, which
// it sets when it starts to read a connection's first request, then
// counts from the first byte, and the wait for that byte is bounded by
// firstBy, the listener's firstWait after the accept, as the wait for
// the next request on a kept connection is by the idle timeout. Cut at
// the header deadline instead, such a connection is closed while the
// client may be sending its request on it, which the client sees as a
// request without an answer.
type lateReadConn struct {
	*net.TCPConn
	raw syscall.RawConn

	mu sync.Mutex
	rd time.Time // the read deadline last set
	// setAt is when rd was set, and stop whether it had passed then.
	setAt time.Time
	stop  bool
	// firstBy ends the wait for the first byte; zero once readFirst has
	// run (the first read under a deadline the server set), or when the
	// listener sets no such wait.
	firstBy time.Time
	// waited is how long readFirst waited for the first byte, from when
	// the header deadline was set, and from is when that was. The next
	// deadline set at or after from (the whole request's, which the server
	// counts from before the wait, as it counted the header's) is moved
	// on by waited, so that the body's deadline too counts from the first
	// byte; a deadline set before from (the server's "a long time ago", to
	// stop a read) or none at all is taken as it is and ends the shift.
	waited time.Duration
	from   time.Time
}

func (c *lateReadConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.TCPConn.SetReadDeadline(c.setRead(t))
}

// SetDeadline sets the read deadline as SetReadDeadline does and the
// write deadline to t.
func (c *lateReadConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.TCPConn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.TCPConn.SetReadDeadline(c.setRead(t))
}

// setRead notes t, moved on by the wait for the first byte if it is the
// first deadline after that wait (see waited), as the read deadline and
// returns it. It is called with c.mu held.
func (c *lateReadConn) setRead(t time.Time) time.Time {
	if c.waited > 0 {
		if !t.IsZero() && !t.Before(c.from) {
			t = t.Add(c.waited)
		}
		c.waited = 0
	}
	c.rd, c.setAt = t, time.Now()
	c.stop = !t.IsZero() && t.Before(c.setAt)
	return t
}

func (c *lateReadConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	if !c.firstBy.IsZero() && !c.rd.IsZero() && !c.stop && len(p) > 0 {
		return c.readFirst(p)
	}
	rd := c.rd
	if c.stop || rd.IsZero() || time.Now().Before(rd) || len(p) == 0 {
		c.mu.Unlock()
		return c.TCPConn.Read(p)
	}
	defer c.mu.Unlock()
	return c.readWaiting(p, rd)
}

// readFirst reads the connection's first bytes, waiting for them until
// firstBy or the read deadline, whichever is later, and then moves the
// read deadline on by the time the wait took, so that it counts from the
// first byte, as the next deadline set will be (see waited). It is called with c.mu held, and releases it while it
// waits: a deadline set meanwhile (to stop the read, say) holds.
func (c *lateReadConn) readFirst(p []byte) (int, error) {
	wait := c.firstBy
	if c.rd.After(wait) {
		wait = c.rd
	}
	c.firstBy = time.Time{}
	if err := c.TCPConn.SetReadDeadline(wait); err != nil {
		c.mu.Unlock()
		return 0, err
	}
	c.mu.Unlock()
	n, err := c.TCPConn.Read(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.rd.IsZero() && !c.stop {
		now := time.Now()
		c.waited, c.from = now.Sub(c.setAt), c.setAt
		c.rd, c.setAt = now.Add(c.rd.Sub(c.setAt)), now
	}
	if derr := c.TCPConn.SetReadDeadline(c.rd); err == nil {
		err = derr
	}
	return n, err
}

// readWaiting reads what the kernel already holds, without waiting; rd is
// the read deadline, already past, which it lifts for the read and then
// sets again. c.mu is held, so no other deadline is set meanwhile.
func (c *lateReadConn) readWaiting(p []byte, rd time.Time) (int, error) {
	if err := c.TCPConn.SetReadDeadline(time.Time{}); err != nil {
		return 0, err
	}
	var (
		n     int
		errno error
	)
	err := c.raw.Read(func(fd uintptr) bool {
		n, errno = syscall.Read(int(fd), p)
		return true // never wait
	})
	if derr := c.TCPConn.SetReadDeadline(rd); err == nil {
		err = derr
	}
	switch {
	case err != nil:
		return 0, err
	case errors.Is(errno, syscall.EAGAIN) || errors.Is(errno, syscall.EINTR):
		return 0, c.opError(os.ErrDeadlineExceeded)
	case errno != nil:
		return 0, c.opError(os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c *lateReadConn) opError(err error) error {
	return &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
