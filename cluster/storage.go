package cluster

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/coreos/etcd/pkg/fileutil"
	"github.com/hashicorp/raft-wal/types"
)

// Disk is the file system a node keeps its data directory on
// (Config.Disk). Through it go the raft log's segment files
// (LogStoreWAL: raft-wal reads and writes them through a Disk, and the
// check and repair of the log before it opens, walcheck.go), the FSM's
// snapshot work files (snapshot.go), the removal of partial snapshots
// (snapshot_store.go) and the data directory's creation. Paths are the
// operating system's, under Config.DataDir.
//
// The bbolt files (raft.db, the stable store and the LogStoreBolt log;
// wal/wal-meta.db, the WAL's segment list) and raft's snapshot store
// (DataDir/snapshots) are opened by path on the operating system's file
// system: bbolt maps and locks a real file, and raft's FileSnapshotStore
// has no file-system seam. Each of them fsyncs before it reports a write
// done (a bolt commit, a snapshot sink's Close), so DataDir must be a real
// directory under any Disk; the simulated disk of the tests wraps one.
//
// The default is OSDisk. A Disk is used from raft's goroutines and must
// be safe for concurrent use.
type Disk interface {
	// Create creates the file at path, which must not exist, sized size
	// bytes (zeros, preallocated where the file system can; 0: empty),
	// open for reading and writing. Neither the file nor its directory
	// entry is durable before File.Sync and SyncDir.
	Create(path string, size int64) (File, error)
	// Open opens the existing file at path for reading, and for writing
	// too when write is set.
	Open(path string, write bool) (File, error)
	// CreateTemp creates a new file in dir, named as os.CreateTemp names
	// it from pattern, open for reading and writing.
	CreateTemp(dir, pattern string) (File, error)
	// Remove removes the file at path. Like a creation, the removal is
	// durable once SyncDir of its directory returns.
	Remove(path string) error
	// RemoveAll removes path and everything under it.
	RemoveAll(path string) error
	// ReadDir lists dir, sorted by name.
	ReadDir(dir string) ([]fs.DirEntry, error)
	// Stat describes the file or directory at path.
	Stat(path string) (fs.FileInfo, error)
	// MkdirAll creates dir and the directories above it that are missing.
	MkdirAll(dir string) error
	// SyncDir makes the entries of dir durable (creations, removals).
	SyncDir(dir string) error
}

// File is a file opened through a Disk.
type File interface {
	io.Writer // at the file's offset, which starts at 0
	io.ReaderAt
	io.WriterAt
	io.Closer
	// Sync makes what was written durable (fsync). It does not make the
	// file's directory entry durable: Disk.SyncDir does.
	Sync() error
	// Name is the path the file was opened or created with.
	Name() string
}

// OSDisk is the operating system's file system: the default Disk.
type OSDisk struct{}

var _ Disk = OSDisk{}

func (OSDisk) Create(path string, size int64) (File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if size > 0 {
		// raft-wal's own file system preallocates the same way (fs/fs.go).
		if size > math.MaxInt32 {
			f.Close()
			return nil, fmt.Errorf("cluster: file size %d over the maximum %d", size, math.MaxInt32)
		}
		if err := fileutil.Preallocate(f, size, true); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

func (OSDisk) Open(path string, write bool) (File, error) {
	flag := os.O_RDONLY
	if write {
		flag = os.O_RDWR
	}
	return os.OpenFile(path, flag, 0o644)
}

func (OSDisk) CreateTemp(dir, pattern string) (File, error) { return os.CreateTemp(dir, pattern) }
func (OSDisk) Remove(path string) error                     { return os.Remove(path) }
func (OSDisk) RemoveAll(path string) error                  { return os.RemoveAll(path) }
func (OSDisk) ReadDir(dir string) ([]fs.DirEntry, error)    { return os.ReadDir(dir) }
func (OSDisk) Stat(path string) (fs.FileInfo, error)        { return os.Stat(path) }
func (OSDisk) MkdirAll(dir string) error                    { return os.MkdirAll(dir, 0o755) }

func (OSDisk) SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// diskOrOS is d, or OSDisk when d is nil.
func diskOrOS(d Disk) Disk {
	if d == nil {
		return OSDisk{}
	}
	return d
}

// walVFS is raft-wal's file system (types.VFS) on a Disk, with the
// durability raft-wal's own (fs/) gives: a new segment's directory entry
// is synced at the segment's first Sync, which is before any entry in it
// is acknowledged, and a deleted segment's at once.
type walVFS struct{ disk Disk }

var _ types.VFS = walVFS{}

func (v walVFS) ListDir(dir string) ([]string, error) {
	ents, err := v.disk.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

func (v walVFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	if size > math.MaxInt32 {
		return nil, fmt.Errorf("cluster: segment size %d over the maximum %d", size, math.MaxInt32)
	}
	f, err := v.disk.Create(filepath.Join(dir, name), int64(size))
	if err != nil {
		return nil, err
	}
	return &walFile{File: f, disk: v.disk, dir: dir, dirPending: true}, nil
}

func (v walVFS) Delete(dir, name string) error {
	if err := v.disk.Remove(filepath.Join(dir, name)); err != nil {
		return err
	}
	return v.disk.SyncDir(dir)
}

func (v walVFS) OpenReader(dir, name string) (types.ReadableFile, error) {
	return v.disk.Open(filepath.Join(dir, name), false)
}

func (v walVFS) OpenWriter(dir, name string) (types.WritableFile, error) {
	f, err := v.disk.Open(filepath.Join(dir, name), true)
	if err != nil {
		return nil, err
	}
	return &walFile{File: f, disk: v.disk, dir: dir}, nil
}

// walFile is a segment file; the first Sync of a new one also syncs its
// directory.
type walFile struct {
	File
	disk       Disk
	dir        string
	dirPending bool        // created by this handle: its entry is synced at the first Sync
	dirSynced  atomic.Bool // that was done
}

func (f *walFile) Sync() error {
	// The planted bug "lost-fsync" (mutants.go) skips the fsync of what
	// the WAL wrote, which raft then acknowledges.
	if !mutant("lost-fsync") {
		if err := f.File.Sync(); err != nil {
			return err
		}
	}
	if f.dirPending && !f.dirSynced.Load() {
		if err := f.disk.SyncDir(f.dir); err != nil {
			return err
		}
		f.dirSynced.Store(true)
	}
	return nil
}

// readAll reads the whole of f from off (until a read ends at EOF).
func readAll(f io.ReaderAt, off int64) ([]byte, error) {
	b, err := io.ReadAll(io.NewSectionReader(f, off, math.MaxInt64-off))
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return b, err
}
