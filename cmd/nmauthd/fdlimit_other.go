//go:build !unix

package main

// fileLimit is 0, unknown, where there is no getrlimit.
func fileLimit() uint64 { return 0 }
