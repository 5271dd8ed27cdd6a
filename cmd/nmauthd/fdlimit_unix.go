//go:build unix

package main

import "syscall"

// fileLimit is the process's limit of open files (the Go runtime raises
// the soft limit to the hard one at startup), or 0 when it cannot be read.
func fileLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	return uint64(r.Cur)
}
