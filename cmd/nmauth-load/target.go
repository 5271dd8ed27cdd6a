package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// errNotLoopback refuses a target or a connection outside the loopback
// range: the tool is a load generator, and load belongs on this machine.
var errNotLoopback = errors.New("not a loopback address")

// resolver finds the addresses of a host name; *net.Resolver is one.
type resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// checkTarget parses the target URL and accepts it only if its host is a
// loopback address or a name all of whose addresses are loopback.
func checkTarget(ctx context.Context, raw string, r resolver) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("target %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("target %q: scheme must be http or https", raw)
	}
	host := u.Hostname()
	if host == "" {
		return nil, fmt.Errorf("target %q: no host", raw)
	}
	addrs, err := resolveHost(ctx, host, r)
	if err != nil {
		return nil, fmt.Errorf("target %q refused: %w", raw, err)
	}
	for _, a := range addrs {
		if !a.Unmap().IsLoopback() {
			return nil, fmt.Errorf("target %q refused: %s is %w", raw, a, errNotLoopback)
		}
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimRight(u.Path, "/")}, nil
}

func resolveHost(ctx context.Context, host string, r resolver) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve %s: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%s has no address", host)
	}
	return addrs, nil
}

// isIPv4Loopback reports whether host has an IPv4 loopback address, which
// the IPv4 source addresses of -sources can reach.
func isIPv4Loopback(ctx context.Context, host string, r resolver) bool {
	addrs, err := resolveHost(ctx, host, r)
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if a.Unmap().Is4() && a.Unmap().IsLoopback() {
			return true
		}
	}
	return false
}

// loopbackOnly is a net.Dialer Control function. It runs before connect,
// so a name that resolves differently at dial time than when it was
// checked still cannot send a packet off the machine.
func loopbackOnly(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !ap.Addr().Unmap().IsLoopback() {
		return fmt.Errorf("dial %s: %w", address, errNotLoopback)
	}
	return nil
}

// maxSources bounds -sources: the addresses 127.0.0.1 up to 127.0.255.255.
const maxSources = 1 << 16

// sourceAddr is the local address of the i-th of n clients: none of its
// own for a single client, else 127.0.x.y counting up from 127.0.0.1, so
// that a server limiting each client address sees n clients.
func sourceAddr(i, n int) net.Addr {
	if n <= 1 {
		return nil
	}
	a := netip.AddrFrom4([4]byte{127, 0, byte((i + 1) >> 8), byte(i + 1)})
	return &net.TCPAddr{IP: a.AsSlice()}
}

// newClient returns a client of keep-alive connections, up to conns of
// them idle at once, that dials loopback only, from local (when not nil),
// never uses a proxy and never follows a redirect. A dial may take the
// whole timeout: a server that a burst of thousands of connections
// reaches all at once takes them from its listen backlog in turn, and the
// kernel retries a dropped SYN after seconds, as a real client's does.
func newClient(conns int, timeout time.Duration, local net.Addr) *http.Client {
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: loopbackOnly, LocalAddr: local}
	tr := &http.Transport{
		DialContext:         dialer.DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
