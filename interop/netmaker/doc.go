// Package netmaker holds no code of its own: its tests run Netmaker's real
// clients and models against nmauthd. It is its own module so that the
// library's go.mod gains nothing from Netmaker.
package netmaker
