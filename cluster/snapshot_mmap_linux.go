//go:build linux

package cluster

import (
	"errors"
	"math"
	"os"
	"syscall"
)

// mapFile maps f's first size bytes read-only. MAP_POPULATE maps every
// page in one call, where faulting them in one by one as the keys are
// scanned costs a fault per page.
func mapFile(f *os.File, size int64) (b []byte, unmap func() error, err error) {
	if size <= 0 || size > math.MaxInt {
		return nil, nil, errors.New("cannot map this size")
	}
	b, err = syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}
