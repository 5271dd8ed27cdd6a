package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/nmauth/nmauth"
)

// acceptPair returns the two ends of a loopback TCP connection, the
// server's accepted through listen.
func acceptPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := listen("127.0.0.1:0", true)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return server, client
}

// TestLateReadTakesWaitingBytes: bytes the client sent before the read
// deadline are read even when the server reads only after it, as a
// starved server does; a plain connection fails that read.
func TestLateReadTakesWaitingBytes(t *testing.T) {
	server, client := acceptPair(t)
	if err := server.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Write([]byte("GET / HTTP/1.1\r\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the server's goroutine runs late
	buf := make([]byte, 64)
	n, err := server.Read(buf)
	if err != nil || string(buf[:n]) != "GET / HTTP/1.1\r\n" {
		t.Fatalf("a read after the deadline of bytes sent before it: %q, %v", buf[:n], err)
	}
	// Nothing more waits: the deadline, past, ends the next read at once.
	t0 := time.Now()
	_, err = server.Read(buf)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a read after the deadline with nothing sent: %v, want a timeout", err)
	}
	if d := time.Since(t0); d > time.Second {
		t.Fatalf("the read with nothing sent waited %s", d)
	}
	// A deadline lifted or moved on reads as before.
	if err := server.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	go client.Write([]byte("Host: x\r\n"))
	if n, err := server.Read(buf); err != nil || string(buf[:n]) != "Host: x\r\n" {
		t.Fatalf("a read before the deadline: %q, %v", buf[:n], err)
	}
	client.Close()
	if _, err := server.Read(buf); err != io.EOF {
		t.Fatalf("a read after the client closed: %v, want EOF", err)
	}
}

// TestLateReadDeadlineSetPastStops: a deadline already past when it is
// set, as the HTTP server sets to end its read between requests, fails
// the read at once even with bytes waiting, which the next read takes
// once the deadline is lifted.
func TestLateReadDeadlineSetPastStops(t *testing.T) {
	server, client := acceptPair(t)
	if _, err := client.Write([]byte("GET /next HTTP/1.1\r\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the bytes are in the kernel
	for _, set := range []func(time.Time) error{server.SetReadDeadline, server.SetDeadline} {
		if err := set(time.Unix(1, 0)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		if n, err := server.Read(buf); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a read under a deadline set past: %q, %v; want a timeout and no bytes", buf[:n], err)
		}
	}
	if err := server.SetDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, err := server.Read(buf); err != nil || string(buf[:n]) != "GET /next HTTP/1.1\r\n" {
		t.Fatalf("the read after the deadline was lifted: %q, %v", buf[:n], err)
	}
}

// TestLateReadEOFAfterDeadline: a client that closed is seen as EOF by a
// read after the deadline, not as a timeout.
func TestLateReadEOFAfterDeadline(t *testing.T) {
	server, client := acceptPair(t)
	server.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	client.Close()
	time.Sleep(50 * time.Millisecond)
	if _, err := server.Read(make([]byte, 8)); err != io.EOF {
		t.Fatalf("got %v, want EOF", err)
	}
}

// TestHeaderTimeoutStillCutsSlowClients: through nmauthd's HTTP server on
// its listener, a client that sends part of its header and then nothing
// is closed within the header timeout, while a whole request is answered.
func TestHeaderTimeoutStillCutsSlowClients(t *testing.T) {
	ln, err := listen("127.0.0.1:0", true)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		ReadHeaderTimeout: 200 * time.Millisecond,
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	slow, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := slow.Write([]byte("POST /api/hosts/adm/authenticate HTTP/1.1\r\nHost: x\r\n")); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	slow.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := slow.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("a client that never finished its header: read %d bytes, %v; want the server to close it", n, err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Fatalf("the server closed a slow header after %s, want about 200ms", d)
	}

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a whole request: %v, %v", resp, err)
	}
	resp.Body.Close()
}

// TestFirstByteWaitsAsIdle: through nmauthd's HTTP server on its
// listener, a connection opened before its client has a request to send
// is answered when the request comes after the header timeout, which
// then counts from the first byte (a slow header is still cut, by
// TestHeaderTimeoutStillCutsSlowClients); one that never sends is closed
// once the wait for its first byte ends.
func TestFirstByteWaitsAsIdle(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const headerTimeout, firstWait = 200 * time.Millisecond, 2 * time.Second
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		ReadHeaderTimeout: headerTimeout,
	}
	go srv.Serve(lateReadListener{Listener: ln, firstWait: firstWait})
	t.Cleanup(func() { srv.Close() })

	early, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	time.Sleep(3 * headerTimeout)
	if _, err := early.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	early.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(early), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a request sent after the header timeout on a connection opened before it: %v, %v; want 200", resp, err)
	}
	resp.Body.Close()

	silent, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	t0 := time.Now()
	silent.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := silent.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("a connection that never sends: read %d bytes, %v; want the server to close it", n, err)
	}
	if d := time.Since(t0); d < firstWait-headerTimeout || d > firstWait+3*time.Second {
		t.Fatalf("the server closed a connection that never sent after %s, want about %s", d, firstWait)
	}
}

// TestBodyDeadlineCountsFromFirstByte: through nmauthd's routes on its
// listener, a connection that waits longer than the whole request's read
// timeout before its first byte, and then sends its login's header and
// its body in two packets, gets the login's answer (401, no such user),
// not "400 malformed JSON body": the body's deadline, like the header's,
// counts from the request's first byte. The timeouts are those of
// newHTTPServer scaled down (15 s to 600 ms, the idle wait of 17 s to
// 1 s).
func TestBodyDeadlineCountsFromFirstByte(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const headerTimeout, readTimeout, idle = 200 * time.Millisecond, 600 * time.Millisecond, time.Second
	srv := &http.Server{
		Handler:           newMux(newTestAuthenticator(t), nmauth.WireSpec),
		ReadHeaderTimeout: headerTimeout,
		ReadTimeout:       readTimeout,
	}
	go srv.Serve(lateReadListener{Listener: ln, firstWait: 10 * time.Second})
	t.Cleanup(func() { srv.Close() })

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetNoDelay(true)
	time.Sleep(idle)
	body := `{"username":"nobody","password":"not-the-password"}`
	head := "POST /api/users/adm/authenticate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	if _, err := c.Write([]byte(head)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(headerTimeout / 2) // the body comes in a packet of its own
	if _, err := c.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a login whose body came %s after its header, on a connection idle %s first: %d %s; want 401",
			headerTimeout/2, idle, resp.StatusCode, msg)
	}
}
