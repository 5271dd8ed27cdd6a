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
// when the server gets round to reading it after its deadline.
type lateReadListener struct{ net.Listener }

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
	return &lateReadConn{TCPConn: tc, raw: raw}, nil
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
type lateReadConn struct {
	*net.TCPConn
	raw syscall.RawConn

	mu sync.Mutex
	rd time.Time // the read deadline last set
	// stop is whether rd had passed when it was set.
	stop bool
}

func (c *lateReadConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setRead(t)
	return c.TCPConn.SetReadDeadline(t)
}

func (c *lateReadConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setRead(t)
	return c.TCPConn.SetDeadline(t)
}

// setRead notes t as the read deadline. It is called with c.mu held.
func (c *lateReadConn) setRead(t time.Time) {
	c.rd = t
	c.stop = !t.IsZero() && t.Before(time.Now())
}

func (c *lateReadConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	rd := c.rd
	if c.stop || rd.IsZero() || time.Now().Before(rd) || len(p) == 0 {
		c.mu.Unlock()
		return c.TCPConn.Read(p)
	}
	defer c.mu.Unlock()
	return c.readWaiting(p, rd)
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
