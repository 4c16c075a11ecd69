package cluster

import (
	"path/filepath"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Partial snapshots. raft's FileSnapshotStore writes a snapshot into
// snapshots/<id>.tmp and renames it into place when the sink closes; it
// never removes a .tmp directory that a failure left behind, and several
// failures leave one (hashicorp/raft v1.7.3, file_snapshot.go):
//   - Create fails after the directory is made (writing meta.json or
//     creating state.bin: ENOSPC, EMFILE);
//   - Cancel returns early when flushing the buffered writer fails, which
//     it always does after a write failed with ENOSPC (bufio keeps the
//     error): the path raft takes when an install's copy fails;
//   - Close fails writing meta.json or renaming;
//   - the process dies while a snapshot is written or installed.
//
// Each leaves up to a snapshot's size on a disk that is often already
// full, and List skips .tmp directories, so nothing ever reclaims it.
// cleanSnapshotStore removes them: every .tmp directory at open (no sink
// is live then), a sink's own directory when its Close or Cancel fails,
// and, when Create fails, every .tmp directory that is not a live sink's.

// snapshotsDir is raft's FileSnapshotStore directory inside DataDir.
const snapshotsDir = "snapshots"

// fsmSnapshotPattern names the FSM's snapshot files in DataDir
// (fileSnapshot).
const fsmSnapshotPattern = ".fsm-snapshot-*.tmp"

// partialSuffix is what raft's FileSnapshotStore appends to the directory
// of a snapshot being written.
const partialSuffix = ".tmp"

// cleanSnapshotStore is raft's FileSnapshotStore that removes partial
// snapshot directories (see above).
type cleanSnapshotStore struct {
	*raft.FileSnapshotStore
	dir  string // DataDir/snapshots
	disk Disk   // removes the partial snapshots
	log  hclog.Logger

	mu   sync.Mutex
	live map[string]bool // .tmp directory names of sinks not yet closed
}

// newCleanSnapshotStore opens the snapshot store in dataDir and removes,
// on disk (nil: OSDisk), the partial snapshots a previous run left.
func newCleanSnapshotStore(disk Disk, dataDir string, retain int, logger hclog.Logger) (*cleanSnapshotStore, error) {
	disk = diskOrOS(disk)
	fs, err := raft.NewFileSnapshotStoreWithLogger(dataDir, retain, logger)
	if err != nil {
		return nil, err
	}
	s := &cleanSnapshotStore{
		FileSnapshotStore: fs,
		dir:               filepath.Join(dataDir, snapshotsDir),
		disk:              disk,
		log:               logger,
		live:              map[string]bool{},
	}
	s.removePartial("left by an earlier run")
	// The FSM's snapshot files (fileSnapshot) are unlinked as soon as
	// they are made; where the OS cannot unlink an open file, a crash
	// leaves them in the data directory.
	ents, err := disk.ReadDir(dataDir)
	if err != nil {
		logger.Warn("cannot list the data directory to remove partial snapshots", "dir", dataDir, "error", err)
	}
	for _, e := range ents {
		if ok, _ := filepath.Match(fsmSnapshotPattern, e.Name()); !ok || e.IsDir() {
			continue
		}
		path := filepath.Join(dataDir, e.Name())
		size := int64(0)
		if fi, err := e.Info(); err == nil {
			size = fi.Size()
		}
		if err := disk.Remove(path); err == nil {
			logger.Warn("removed a partial snapshot", "path", path, "bytes", size, "why", "left by an earlier run")
		}
	}
	return s, nil
}

// removePartial removes every .tmp directory no live sink writes.
func (s *cleanSnapshotStore) removePartial(why string) {
	ents, err := s.disk.ReadDir(s.dir)
	if err != nil {
		s.log.Warn("cannot list snapshots to remove partial ones", "dir", s.dir, "error", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range ents {
		if !e.IsDir() || !strings.HasSuffix(e.Name(), partialSuffix) || s.live[e.Name()] {
			continue
		}
		s.remove(e.Name(), why)
	}
}

// remove deletes one partial snapshot directory, logging what it frees.
func (s *cleanSnapshotStore) remove(name, why string) {
	path := filepath.Join(s.dir, name)
	size := dirSize(s.disk, path)
	if err := s.disk.RemoveAll(path); err != nil {
		s.log.Error("cannot remove a partial snapshot", "path", path, "error", err)
		return
	}
	s.log.Warn("removed a partial snapshot", "path", path, "bytes", size, "why", why)
}

// dirSize is the total size of the regular files under path (best effort:
// it is only logged).
func dirSize(disk Disk, path string) int64 {
	ents, err := disk.ReadDir(path)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range ents {
		switch {
		case e.IsDir():
			n += dirSize(disk, filepath.Join(path, e.Name()))
		case e.Type().IsRegular():
			if fi, err := e.Info(); err == nil {
				n += fi.Size()
			}
		}
	}
	return n
}

// Create starts a snapshot; when that fails, the directory it may have
// made is removed.
func (s *cleanSnapshotStore) Create(version raft.SnapshotVersion, index, term uint64,
	configuration raft.Configuration, configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.FileSnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		s.removePartial("creating a snapshot failed")
		return nil, err
	}
	name := sink.ID() + partialSuffix
	s.mu.Lock()
	s.live[name] = true
	s.mu.Unlock()
	return &cleanSink{SnapshotSink: sink, store: s, name: name}, nil
}

// cleanSink removes its directory when Close or Cancel fails.
type cleanSink struct {
	raft.SnapshotSink
	store *cleanSnapshotStore
	name  string
}

func (c *cleanSink) Close() error {
	return c.end(c.SnapshotSink.Close(), "writing the snapshot failed")
}

func (c *cleanSink) Cancel() error {
	return c.end(c.SnapshotSink.Cancel(), "the snapshot was cancelled")
}

func (c *cleanSink) end(err error, why string) error {
	s := c.store
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.live[c.name] {
		return err // a second Close or Cancel
	}
	delete(s.live, c.name)
	if _, statErr := s.disk.Stat(filepath.Join(s.dir, c.name)); statErr == nil {
		// Still there: the sink failed before it renamed or removed it.
		s.remove(c.name, why)
	}
	return err
}
