//go:build unix

package main

import "syscall"

// fdLimit is the process's open-file limit (the soft RLIMIT_NOFILE, which
// Go raised to the hard one at start); 0 when unknown or unlimited.
func fdLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	cur := uint64(r.Cur) // int64 on some BSDs
	if cur == ^uint64(0) || cur == 1<<63-1 {
		return 0 // unlimited
	}
	return cur
}
