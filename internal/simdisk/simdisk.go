// Package simdisk is a cluster.Disk with a page cache that a simulated
// crash empties: what a node wrote and did not sync is lost (or torn) at
// the crash, as on a machine that loses power. The simulator (package
// sim, through testcluster) runs every node on one, so that a node
// crashed and restarted finds on its disk only what it made durable.
//
// The files are real (in a directory of the operating system, usually
// tmpfs), so that what the node opens by path beside the Disk — the
// bbolt files and raft's snapshot store, which fsync before they report
// a write done — stays consistent with them. The disk keeps, for every
// write not yet synced, the bytes it overwrote; a crash puts them back.
//
// The rules, after POSIX and Linux's page cache:
//   - A write is visible to every read at once.
//   - File.Sync makes the file's writes durable; Disk.SyncDir makes the
//     directory's entries durable: files created or removed in it.
//   - At Crash, writes not synced are undone, newest first; with tear,
//     a seeded prefix of them survives, the last of that prefix cut at
//     a seeded byte (a write torn by the power cut).
//   - A file created (Create, CreateTemp) whose directory was not synced
//     since is gone after a crash; one whose directory was synced but
//     which was never synced itself is there, empty.
//   - A file removed whose directory was not synced since comes back,
//     with what was durable in it (unless it was created since the last
//     sync of its directory: then it never was durable).
//   - Directories (MkdirAll) and RemoveAll are durable at once; nothing
//     here renames.
//
// A Disk outlives the node's restarts: crash it between the node's
// stop and its next start.
package simdisk

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/locknode/locknode/cluster"
)

// hiddenPrefix names a removed file kept until its removal is durable;
// ReadDir does not list it.
const hiddenPrefix = ".simdisk-removed-"

// Disk is a cluster.Disk whose unsynced writes a Crash loses.
type Disk struct {
	os cluster.OSDisk

	mu      sync.Mutex
	rng     *rand.Rand
	files   map[string]*fileState // by path: files written through the disk since their last sync
	fresh   map[string]bool       // paths created whose directory entry is not durable
	removed map[string]string     // hidden path -> path: removed, the removal not durable
	seq     int
	crashes int
}

var _ cluster.Disk = (*Disk)(nil)

// fileState is what one file holds that is not durable.
type fileState struct {
	undo []undo // writes since the last sync, oldest first
}

// undo puts back what one write changed.
type undo struct {
	off  int64
	old  []byte // the bytes at off before the write (those below size)
	size int64  // the file's size before the write
}

// New returns a disk whose crashes tear writes as seed draws.
func New(seed uint64) *Disk {
	return &Disk{
		rng:     rand.New(rand.NewPCG(seed, seed^0x5eed)),
		files:   map[string]*fileState{},
		fresh:   map[string]bool{},
		removed: map[string]string{},
	}
}

// state is path's fileState, made if missing. Caller holds mu.
func (d *Disk) state(path string) *fileState {
	st := d.files[path]
	if st == nil {
		st = &fileState{}
		d.files[path] = st
	}
	return st
}

func (d *Disk) Create(path string, size int64) (cluster.File, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	st := d.state(path)
	// Its size too is not durable before a sync.
	st.undo = append(st.undo, undo{size: 0})
	d.fresh[path] = true
	if size > 0 {
		if err := f.Truncate(size); err != nil {
			f.Close()
			return nil, err
		}
	}
	return &file{d: d, f: f, st: st, name: path}, nil
}

func (d *Disk) Open(path string, write bool) (cluster.File, error) {
	f, err := d.os.Open(path, write)
	if err != nil {
		return nil, err
	}
	if !write {
		return f, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return &file{d: d, f: f.(*os.File), st: d.state(path), name: path}, nil
}

// CreateTemp creates a file that is not tracked beyond its directory
// entry: the node removes its snapshot work files at once, and reads
// them mapped, which needs the operating system's file.
func (d *Disk) CreateTemp(dir, pattern string) (cluster.File, error) {
	f, err := d.os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.fresh[f.Name()] = true
	d.mu.Unlock()
	return f, nil
}

func (d *Disk) Remove(path string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fresh[path] {
		if err := os.Remove(path); err != nil {
			return err
		}
		delete(d.fresh, path)
		delete(d.files, path)
		return nil
	}
	d.seq++
	hidden := filepath.Join(filepath.Dir(path), fmt.Sprintf("%s%d-%s", hiddenPrefix, d.seq, filepath.Base(path)))
	if err := os.Rename(path, hidden); err != nil {
		var le *os.LinkError
		if errors.As(err, &le) {
			return &fs.PathError{Op: "remove", Path: path, Err: le.Err}
		}
		return err
	}
	if st := d.files[path]; st != nil {
		d.files[hidden] = st
		delete(d.files, path)
	}
	d.removed[hidden] = path
	return nil
}

func (d *Disk) RemoveAll(path string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := os.RemoveAll(path); err != nil {
		return err
	}
	under := func(p string) bool { return p == path || strings.HasPrefix(p, path+string(filepath.Separator)) }
	for p := range d.files {
		if under(p) {
			delete(d.files, p)
		}
	}
	for p := range d.fresh {
		if under(p) {
			delete(d.fresh, p)
		}
	}
	for h := range d.removed {
		if under(h) {
			delete(d.removed, h)
		}
	}
	return nil
}

// ReadDir lists dir without the removed files kept for a crash.
func (d *Disk) ReadDir(dir string) ([]fs.DirEntry, error) {
	ents, err := d.os.ReadDir(dir)
	out := ents[:0]
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), hiddenPrefix) {
			out = append(out, e)
		}
	}
	return out, err
}

func (d *Disk) Stat(path string) (fs.FileInfo, error) { return d.os.Stat(path) }
func (d *Disk) MkdirAll(dir string) error             { return d.os.MkdirAll(dir) }

// SyncDir makes the creations and removals in dir durable.
func (d *Disk) SyncDir(dir string) error {
	if err := d.os.SyncDir(dir); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for p := range d.fresh {
		if filepath.Dir(p) == dir {
			delete(d.fresh, p)
		}
	}
	for h := range d.removed {
		if filepath.Dir(h) == dir {
			if err := os.Remove(h); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			delete(d.removed, h)
			delete(d.files, h)
		}
	}
	return nil
}

// Unsynced is how many writes through the disk are not durable.
func (d *Disk) Unsynced() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, st := range d.files {
		n += len(st.undo)
	}
	return n
}

// Crashes is how many times Crash ran.
func (d *Disk) Crashes() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.crashes
}

// Crash loses what is not durable, as a power cut would (see the
// package doc); with tear, a seeded prefix of each file's unsynced
// writes survives, its last write cut at a seeded byte. Call it while no
// file of the disk is in use (the node stopped); afterwards everything
// on the disk is durable.
func (d *Disk) Crash(tear bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.crashes++
	// Map order would make the tears differ between runs of one seed.
	paths := make([]string, 0, len(d.files))
	for p := range d.files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var errs []error
	for _, p := range paths {
		if st := d.files[p]; len(st.undo) > 0 {
			errs = append(errs, d.rollBack(p, st.undo, tear))
		}
	}
	for p := range d.fresh {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	for h, p := range d.removed {
		errs = append(errs, os.Rename(h, p))
	}
	d.files = map[string]*fileState{}
	d.fresh = map[string]bool{}
	d.removed = map[string]string{}
	return errors.Join(errs...)
}

// rollBack undoes a file's unsynced writes, newest first; with tear it
// keeps a seeded prefix, the last write of it cut.
func (d *Disk) rollBack(path string, undos []undo, tear bool) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("simdisk: crash: %w", err)
	}
	defer f.Close()
	keep := 0 // writes that reach the disk whole
	if tear {
		keep = d.rng.IntN(len(undos) + 1)
	}
	for i := len(undos) - 1; i >= keep; i-- {
		u := undos[i]
		cut := 0 // bytes of this write that reach the disk
		if tear && i == keep {
			cut = d.rng.IntN(len(u.old) + 1)
		}
		if _, err := f.WriteAt(u.old[cut:], u.off+int64(cut)); err != nil {
			return fmt.Errorf("simdisk: crash: %w", err)
		}
		size := u.size // a write that grew the file grew it only if it reached the disk
		if cut > 0 {
			size = max(u.size, u.off+int64(cut))
		}
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("simdisk: crash: %w", err)
		}
		if size < fi.Size() {
			if err := f.Truncate(size); err != nil {
				return fmt.Errorf("simdisk: crash: %w", err)
			}
		}
	}
	return nil
}

// file is a file opened for writing through a Disk.
type file struct {
	d    *Disk
	f    *os.File
	st   *fileState
	name string

	mu  sync.Mutex
	off int64 // Write's offset
}

func (f *file) Name() string                            { return f.name }
func (f *file) ReadAt(p []byte, off int64) (int, error) { return f.f.ReadAt(p, off) }
func (f *file) Close() error                            { return f.f.Close() }

// WriteAt writes p at off, first keeping what it overwrites.
func (f *file) WriteAt(p []byte, off int64) (int, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	fi, err := f.f.Stat()
	if err != nil {
		return 0, err
	}
	u := undo{off: off, size: fi.Size()}
	if end := min(off+int64(len(p)), fi.Size()); end > off {
		u.old = make([]byte, end-off)
		if _, err := f.f.ReadAt(u.old, off); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
	}
	n, err := f.f.WriteAt(p, off)
	if n > 0 {
		f.st.undo = append(f.st.undo, u)
	}
	return n, err
}

func (f *file) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.WriteAt(p, f.off)
	f.off += int64(n)
	return n, err
}

// Sync makes the file's writes durable.
func (f *file) Sync() error {
	if err := f.f.Sync(); err != nil {
		return err
	}
	f.d.mu.Lock()
	f.st.undo = nil
	f.d.mu.Unlock()
	return nil
}
