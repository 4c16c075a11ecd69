package cluster

import (
	"github.com/hashicorp/raft-wal/types"
)

// StorageOp is an operation on a raft log segment file (LogStoreWAL)
// that Config.StorageFaults can fail.
type StorageOp int

// The operations StorageFaults sees.
const (
	// StorageWrite writes a batch of appended entries (with its commit
	// frame) at the end of the tail segment.
	StorageWrite StorageOp = iota + 1
	// StorageSync fsyncs a segment after a write.
	StorageSync
	// StorageCreate creates and preallocates a new segment (the log's
	// first, or a rotation when the tail fills).
	StorageCreate
)

func (op StorageOp) String() string {
	switch op {
	case StorageWrite:
		return "write"
	case StorageSync:
		return "fsync"
	case StorageCreate:
		return "create"
	}
	return "unknown"
}

// StorageFaults decides the fate of one operation on the raft log's
// files, as a failing disk would: a nil error lets it run; otherwise it
// fails with err (e.g. syscall.ENOSPC, syscall.EIO), and a write of size
// bytes first writes its first n bytes when 0 < n < size (a torn write).
// It is called from raft's goroutines, concurrently with itself.
type StorageFaults func(op StorageOp, size int) (n int, err error)

// faultVFS is raft-wal's file system with StorageFaults applied.
type faultVFS struct {
	types.VFS
	faults StorageFaults
}

func (v faultVFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	if _, err := v.faults(StorageCreate, int(size)); err != nil {
		return nil, err
	}
	f, err := v.VFS.Create(dir, name, size)
	if err != nil {
		return nil, err
	}
	return faultFile{WritableFile: f, faults: v.faults}, nil
}

func (v faultVFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	f, err := v.VFS.OpenWriter(dir, name)
	if err != nil {
		return nil, err
	}
	return faultFile{WritableFile: f, faults: v.faults}, nil
}

// faultFile is a segment file with StorageFaults applied.
type faultFile struct {
	types.WritableFile
	faults StorageFaults
}

func (f faultFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.faults(StorageWrite, len(p))
	if err == nil {
		return f.WritableFile.WriteAt(p, off)
	}
	if n > 0 && n < len(p) {
		if w, werr := f.WritableFile.WriteAt(p[:n], off); werr != nil {
			return w, werr
		}
		return n, err
	}
	return 0, err
}

func (f faultFile) Sync() error {
	if _, err := f.faults(StorageSync, 0); err != nil {
		return err
	}
	return f.WritableFile.Sync()
}
