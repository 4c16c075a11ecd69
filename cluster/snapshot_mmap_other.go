//go:build !linux

package cluster

import (
	"errors"
	"os"
)

// mapFile is not implemented here: Persist reads the file through
// ReadAt instead.
func mapFile(f *os.File, size int64) (b []byte, unmap func() error, err error) {
	return nil, nil, errors.New("not implemented on this OS")
}
