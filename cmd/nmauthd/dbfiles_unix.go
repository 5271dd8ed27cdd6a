//go:build unix

package main

import (
	"io/fs"
	"syscall"
)

// fileOwner is the user id that owns fi's file.
func fileOwner(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
