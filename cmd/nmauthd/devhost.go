package main

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/nmauth/nmauth"
)

// devHostsOnly answers 421 Misdirected Request to a request whose Host
// header names anything but the loopback address that ln listens on:
// localhost or that address, with its port. --dev accepts the well-known
// master key, and a web page elsewhere could otherwise reach this server
// through a name of its own that resolves to 127.0.0.1 (DNS rebinding):
// the browser then sends that name as Host.
func devHostsOnly(h http.Handler, addr net.Addr, auth *nmauth.Authenticator) http.Handler {
	hosts := devHosts(addr)
	refusal := fmt.Sprintf("misdirected request: nmauthd --dev answers only Host %s", strings.Join(hosts, " or "))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !slices.Contains(hosts, strings.ToLower(r.Host)) {
			w.Header().Set("Connection", "close")
			auth.WriteResponse(w, r, http.StatusMisdirectedRequest, refusal, nil)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// devHosts are the Host headers that name addr: localhost and addr's IP
// address, with addr's port, and also without it on port 80, where a
// browser leaves the port out.
func devHosts(addr net.Addr) []string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return nil
	}
	ip := tcp.IP.String()
	if tcp.IP.To4() == nil {
		ip = "[" + ip + "]"
	}
	port := strconv.Itoa(tcp.Port)
	hosts := []string{"localhost:" + port, ip + ":" + port}
	if tcp.Port == 80 {
		hosts = append(hosts, "localhost", ip)
	}
	return hosts
}
