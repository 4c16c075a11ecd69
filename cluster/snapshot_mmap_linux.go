//go:build linux

package cluster

import (
	"errors"
	"fmt"
	"math"
	"os"
	"syscall"
	"unsafe"
)

// mapFile maps f's first size bytes read-only. Not MAP_POPULATE: that
// makes every page resident at once (57 MB at 1M locks, for the whole
// of Persist), where Persist reads the records a few MiB at a time and
// drops the pages behind it (dropMapped); a page read again is faulted
// back in from the page cache, 64 KiB per fault (the kernel's
// fault-around).
func mapFile(f *os.File, size int64) (b []byte, unmap func() error, err error) {
	if size <= 0 || size > math.MaxInt {
		return nil, nil, errors.New("cannot map this size")
	}
	// A read past the end of the file through the mapping is a SIGBUS,
	// which Go cannot recover from: a short file goes to the ReadAt path,
	// which reports it as an error.
	if fi, err := f.Stat(); err != nil || fi.Size() < size {
		return nil, nil, fmt.Errorf("cannot map %d bytes of a shorter file", size)
	}
	b, err = syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}

// dropMapped lets the whole pages within p, a part of a mapFile
// mapping, go from the resident set (MADV_DONTNEED). The bytes stay
// what they were: the mapping is of a file, shared and read-only, so a
// later read faults them back in from the page cache (or the file).
func dropMapped(p []byte) {
	pg := os.Getpagesize()
	if len(p) < pg {
		return
	}
	// The offset of p's first page boundary, and the end of its last
	// whole page, from p's address.
	addr := uintptrOf(p)
	lo := (pg - int(addr%uintptr(pg))) % pg
	hi := len(p) - int((addr+uintptr(len(p)))%uintptr(pg))
	if hi > lo {
		_ = syscall.Madvise(p[lo:hi], syscall.MADV_DONTNEED)
	}
}

// uintptrOf is the address of p's first byte (p not empty).
func uintptrOf(p []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(p))) }
