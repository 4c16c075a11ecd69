//go:build !linux

package cluster

import (
	"errors"
	"os"
)

// mapFile: this build maps no files (mmap is used on Linux only), so
// Persist takes its ReadAt path.
func mapFile(f *os.File, size int64) (b []byte, unmap func() error, err error) {
	return nil, nil, errors.New("cluster: no file mapping on this OS")
}

// dropMapped: nothing is mapped in this build.
func dropMapped(p []byte) {}
