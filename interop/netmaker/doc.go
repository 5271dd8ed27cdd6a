// Package netmaker holds no code of its own: its tests run Netmaker's real
// clients and models against nmauthd. It is its own module so that the
// library's go.mod gains nothing from Netmaker.
//
// Its tests also build and run Netmaker v1.4.0's own server
// (startNetmaker, in netmakerserver_test.go): on SQLite or PostgreSQL,
// with Debian's mosquitto as its broker and nothing reaching beyond the
// machine, its accounts made through its API (seedNetmaker and the
// helpers beside it); and they run deploy/Caddyfile with Debian's Caddy in
// front of nmauthd and that server. Building the server needs cgo (a C
// compiler), for its SQLite driver.
package netmaker
