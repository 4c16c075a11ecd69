//go:build !unix

package main

// fdLimit is 0 (unknown): only unix has an open-file limit to check.
func fdLimit() uint64 { return 0 }
