package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
	"go.etcd.io/bbolt"
)

// Raft log formats (Config.LogStore).
const (
	// LogStoreWAL keeps the raft log in hashicorp/raft-wal segment files
	// under DataDir/wal: one fsync per appended batch.
	LogStoreWAL = "wal"
	// LogStoreBolt keeps the raft log in DataDir/raft.db beside the
	// stable store (the layout before LogStoreWAL): bbolt syncs twice
	// per batch, once for the pages and once for the meta page.
	LogStoreBolt = "bolt"
)

// Names inside DataDir.
const (
	boltFile = "raft.db" // stable store; also the log with LogStoreBolt
	walDir   = "wal"     // raft-wal segments and wal-meta.db
)

// logCacheSize is how many recent entries LogCache keeps in memory: the
// leader reads each new entry back once per follower to replicate it,
// and a cache hit saves a read from the store (a bolt read transaction,
// or a pread plus decode with raft-wal, about 500 times a cache hit's
// cost; figures in bench/results/tuning.md). 512 covers two full batches
// (MaxAppendEntries 256).
const logCacheSize = 512

// walSegmentSize is the size of raft-wal's segment files (its default,
// 64 MiB, preallocated). Tests shrink it to make segments rotate and
// head truncation delete whole segments.
var walSegmentSize = wal.DefaultSegmentSize

// raftStorage is a node's raft storage: the log (LogStoreWAL or
// LogStoreBolt) and the stable store (term, vote; always raft.db).
//
// Durability of the wal log (hashicorp/raft-wal v0.4.2, read from its
// source: wal.go, segment/writer.go, fs/):
//   - WAL.StoreLogs encodes the batch, writes it with a commit frame
//     (CRC of the batch) in one WriteAt to the tail segment and calls
//     File.Sync (fsync) before it returns, so raft never acknowledges an
//     entry that is not on disk. There is no option to skip the sync.
//     The first Sync of a new segment file also fsyncs the directory.
//     (fsync rather than fdatasync costs nothing measurable on a
//     preallocated file: bench/results/tuning.md.)
//   - Segments are preallocated (64 MiB, the default). When an append
//     fills one, that same append writes its index frame (sealing it,
//     still one fsync); rotation to a new segment (wal-meta.db commit,
//     new file) runs in the background and only the next StoreLogs
//     waits for it.
//   - On open after a crash, the tail segment is read to its last
//     commit frame: entries after it are dropped (never acknowledged),
//     and a final batch whose CRC does not match (a torn write) is
//     dropped too, back to the previous commit. Acknowledged batches
//     were fsynced, so only unacknowledged entries can be lost.
//   - DeleteRange supports only a prefix (head truncation after a
//     snapshot: whole sealed segments are deleted, so disk is reclaimed
//     a segment at a time) or a suffix (a follower's conflicting tail).
//     After a head truncation, entries below the new FirstIndex that
//     are still in a kept segment stay readable by GetLog (the segment
//     readers do not check MinIndex). That is harmless: they are the
//     committed entries that were there, and a leader then sends a
//     lagging follower those entries instead of a snapshot.
//     A suffix truncation seals the tail segment (index block, fsync)
//     and starts a new one at the next index. v0.4.0 sealed it without
//     an index block, so the log could not be opened again
//     (hashicorp/raft-wal#31, fixed in v0.4.1): a follower that dropped
//     a conflicting tail could not restart. Hence v0.4.2, not v0.4.0.
//     The WAL is a raft.MonotonicLogStore; raft sees it through walLog,
//     which is not (see there).
//   - wal-meta.db (segment list, bbolt, holds an flock) is opened by us
//     and passed in, so that it is closed even when wal.Open fails
//     (WAL.Close closes it too since v0.4.1; a second Close is a no-op).
type raftStorage struct {
	kind   string                // LogStoreWAL or LogStoreBolt, as opened
	logs   raft.LogStore         // what raft uses: the cached log
	stable *raftboltdb.BoltStore // raft.db
	wal    *walLog               // nil with LogStoreBolt
	walDB  *metadb.BoltMetaDB    // the meta store of the WAL first opened; nil with LogStoreBolt
	// walOpen opens the WAL (checkWAL first); nil with LogStoreBolt.
	walOpen func() (*wal.WAL, *metadb.BoltMetaDB, error)
}

// openWAL checks the WAL in dir (checkWAL) and opens it on vfs,
// reporting a cut tail. The meta store is returned even when opening fails, to be
// closed.
//
// checkWAL reads and repairs through disk, without the faults vfs may add.
func openWAL(dir string, disk Disk, vfs types.VFS, logger hclog.Logger) (*wal.WAL, *metadb.BoltMetaDB, error) {
	db := &metadb.BoltMetaDB{}
	cut, err := checkWAL(dir, disk, db, logger)
	if err != nil {
		return nil, db, err
	}
	w, err := wal.Open(dir, wal.WithMetaStore(db), wal.WithLogger(logger.Named("wal")),
		wal.WithSegmentSize(walSegmentSize), wal.WithSegmentFiler(segment.NewFiler(dir, vfs)))
	if err != nil {
		return nil, db, fmt.Errorf("cluster: wal log store: %w", err)
	}
	last, err := w.LastIndex()
	if err != nil {
		_ = w.Close()
		return nil, db, fmt.Errorf("cluster: wal log store: %w", err)
	}
	cut.report(last, logger)
	return w, db, nil
}

// openRaftStorage opens (or creates) the raft log and stable store in
// dataDir. want is the configured LogStore; it decides only for a data
// dir without a log. A data dir that has one keeps its format:
//   - DataDir/wal exists: LogStoreWAL;
//   - raft.db holds log entries (and there is no wal dir): LogStoreBolt,
//     so a node upgraded from a release without raft-wal still finds
//     every entry it acknowledged.
//
// The WAL's files are on disk (Config.Disk; nil: OSDisk). faults, nil
// but in tests, fails the WAL's file operations (Config.StorageFaults).
func openRaftStorage(disk Disk, dataDir, want string, faults StorageFaults, logger hclog.Logger) (_ *raftStorage, err error) {
	disk = diskOrOS(disk)
	s := &raftStorage{}
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()
	// NoFreelistSync: bolt rebuilds its freelist on open instead of
	// writing it on every commit, so each log append writes (and fsyncs)
	// fewer pages; the map freelist keeps that rebuild and allocation
	// fast as the file grows. Consul and Nomad run raft-boltdb this way.
	stable, err := raftboltdb.New(raftboltdb.Options{
		Path:        filepath.Join(dataDir, boltFile),
		BoltOptions: &bbolt.Options{NoFreelistSync: true, FreelistType: bbolt.FreelistMapType},
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: raft store: %w", err)
	}
	s.stable = stable

	kind, why, err := chooseLogStore(disk, dataDir, want, stable)
	if err != nil {
		return nil, err
	}
	s.kind = kind
	var logs raft.LogStore = stable
	if kind == LogStoreWAL {
		dir := filepath.Join(dataDir, walDir)
		if err := disk.MkdirAll(dir); err != nil {
			return nil, fmt.Errorf("cluster: wal dir: %w", err)
		}
		var vfs types.VFS = walVFS{disk}
		if faults != nil {
			vfs = faultVFS{VFS: vfs, faults: faults}
		}
		s.walOpen = func() (*wal.WAL, *metadb.BoltMetaDB, error) { return openWAL(dir, disk, vfs, logger) }
		w, db, err := s.walOpen()
		s.walDB = db
		if err != nil {
			return nil, err
		}
		s.wal = &walLog{w: w, db: db, reopen: s.walOpen, dir: dir, vfs: vfs, log: logger}
		logs = s.wal
	}
	if s.logs, err = raft.NewLogCache(logCacheSize, logs); err != nil {
		return nil, fmt.Errorf("cluster: log cache: %w", err)
	}
	logger.Info("raft log store", "kind", kind, "why", why)
	return s, nil
}

// chooseLogStore returns the log format for dataDir and why.
func chooseLogStore(disk Disk, dataDir, want string, stable *raftboltdb.BoltStore) (kind, why string, err error) {
	fi, err := disk.Stat(filepath.Join(dataDir, walDir))
	switch {
	case err == nil && !fi.IsDir():
		return "", "", fmt.Errorf("cluster: %s in the data dir is not a directory", walDir)
	case err == nil:
		if want != LogStoreWAL {
			return LogStoreWAL, "the data dir already has a wal log (LogStore " + want + " is for new data dirs)", nil
		}
		return LogStoreWAL, "configured", nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", "", fmt.Errorf("cluster: wal dir: %w", err)
	}
	last, err := stable.LastIndex()
	if err != nil {
		return "", "", fmt.Errorf("cluster: reading %s: %w", boltFile, err)
	}
	if last > 0 {
		if want != LogStoreBolt {
			return LogStoreBolt, fmt.Sprintf("the data dir has its log in %s (up to index %d); it stays there (LogStore %s is for new data dirs)", boltFile, last, want), nil
		}
		return LogStoreBolt, "configured", nil
	}
	return want, "configured, new log", nil
}

// Close closes the log and the stable store; the first error is
// returned.
func (s *raftStorage) Close() error {
	var errs []error
	if s.wal != nil {
		errs = append(errs, s.wal.Close())
	} else if s.walDB != nil {
		// After the WAL (whose Close waits for an append or rotation that
		// uses the meta store, then closes it): a no-op then, needed
		// when wal.Open failed.
		errs = append(errs, s.walDB.Close())
	}
	if s.stable != nil {
		errs = append(errs, s.stable.Close())
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// walLog is the WAL as raft's log store, without raft.MonotonicLogStore.
// With a monotonic store, raft v1.7.3 (and v1.8.0) empties the log after
// installing a snapshot (removeOldLogs) but keeps its in-memory last log
// index: a follower whose log ran past the snapshot index (it restarted
// before the leader saw its last append) then accepts the next append
// against that stale index and panics in processLogs, "log not found"
// (hashicorp/raft#697; it happened here under kill -9 and restart).
// Without it, raft compacts only the prefix the snapshot covers, as with
// bolt. The price is that raft may append after a gap (the first entries
// after a snapshot installed on a follower that lagged behind it), which
// raft-wal refuses; StoreLogs then empties the log first, since raft
// leaves a gap only after a snapshot that covers everything before it.
//
// A failed append leaves raft-wal usable (the segment writer rolls its
// state back and the next append writes at the same offset), except when
// the append that filled a segment succeeded and the rotation to a new
// one failed (creating or preallocating the file, or committing the meta
// store, on a full disk): the sealed tail then refuses every append with
// ErrSealed. StoreLogs then closes and reopens the WAL, which records the
// rotation (checkWAL) and creates the new segment, so the node heals once
// space is freed, without a restart.
//
// A failed truncation (DeleteRange of the tail, which seals it with
// raft-wal's ForceSeal) is the other exception: ForceSeal keeps the index
// offset of a seal whose write failed and reports that seal done when
// asked again, so the next truncation would record a seal whose index
// frame is not on disk (checkWAL repairs that at the next start). After a
// failed truncation the WAL is reopened from disk before it is used
// again.
type walLog struct {
	mu     sync.RWMutex // writers: a reopen; readers: every other call
	w      *wal.WAL
	db     *metadb.BoltMetaDB
	reopen func() (*wal.WAL, *metadb.BoltMetaDB, error)
	dir    string    // the WAL's directory
	vfs    types.VFS // its file system (faultVFS in tests)
	log    hclog.Logger
	// lastProbeLog rate-limits reopenSealed's error (UnixNano).
	lastProbeLog atomic.Int64
	// stale is the WAL a truncation failed on, to reopen before its next
	// use (see above).
	stale atomic.Pointer[wal.WAL]
}

// errWALStale is returned while a WAL whose truncation failed cannot be
// reopened yet.
var errWALStale = errors.New("cluster: the wal is reopened after a failed truncation, and a new segment cannot be created yet")

// fresh reopens the WAL if a truncation failed on it (see walLog).
func (l *walLog) fresh() error {
	stale := l.stale.Load()
	if stale == nil {
		return nil
	}
	l.mu.RLock()
	cur := l.w
	l.mu.RUnlock()
	if stale != cur {
		return nil
	}
	if !l.reopenSealed(stale, "a failed truncation") {
		return errWALStale
	}
	return nil
}

// IsMonotonic hides the WAL's raft.MonotonicLogStore (see walLog).
func (*walLog) IsMonotonic() bool { return false }

func (l *walLog) FirstIndex() (uint64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.w.FirstIndex()
}

func (l *walLog) LastIndex() (uint64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.w.LastIndex()
}

func (l *walLog) GetLog(index uint64, log *raft.Log) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.w.GetLog(index, log)
}

func (l *walLog) DeleteRange(min, max uint64) error {
	if err := l.fresh(); err != nil {
		return err
	}
	w, err := l.deleteRange(min, max)
	if errors.Is(err, wal.ErrSealed) && l.reopenSealed(w, "a failed segment rotation") {
		w, err = l.deleteRange(min, max)
	}
	if err != nil {
		l.stale.Store(w)
	}
	return err
}

func (l *walLog) deleteRange(min, max uint64) (*wal.WAL, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.w, l.w.DeleteRange(min, max)
}

func (l *walLog) StoreLog(e *raft.Log) error { return l.StoreLogs([]*raft.Log{e}) }

func (l *walLog) StoreLogs(logs []*raft.Log) error {
	if err := l.fresh(); err != nil {
		return err
	}
	w, err := l.storeLogs(logs)
	if errors.Is(err, wal.ErrSealed) && l.reopenSealed(w, "a failed segment rotation") {
		_, err = l.storeLogs(logs)
	}
	return err
}

// storeLogs appends to the current WAL, which it returns.
func (l *walLog) storeLogs(logs []*raft.Log) (*wal.WAL, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	w := l.w
	if len(logs) > 0 {
		last, err := w.LastIndex()
		if err != nil {
			return w, err
		}
		if last > 0 && logs[0].Index > last+1 {
			first, err := w.FirstIndex()
			if err != nil {
				return w, err
			}
			if err := w.DeleteRange(first, last); err != nil {
				l.stale.Store(w)
				return w, fmt.Errorf("cluster: emptying the wal log before index %d: %w", logs[0].Index, err)
			}
		}
	}
	return w, w.StoreLogs(logs)
}

// reopenSealed closes and reopens the WAL after sealed, the WAL in use,
// refused a write with ErrSealed (see walLog), and reports whether the
// caller may retry. It reopens only when a segment file can be created
// (probe): a closed WAL must not be seen by raft (a follower's apply
// panics on a log read error), and opening fails when it cannot. Until
// then the append fails and raft retries it.
func (l *walLog) reopenSealed(sealed *wal.WAL, after string) bool {
	if err := l.probe(); err != nil {
		if now := time.Now().UnixNano(); now-l.lastProbeLog.Load() >= int64(10*time.Second) {
			l.lastProbeLog.Store(now)
			l.log.Error("the wal's last segment is full and a new one cannot be created: appends fail until it can (is the disk full?)",
				"error", err)
		}
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w != sealed {
		return true // reopened meanwhile by another caller
	}
	if err := l.w.Close(); err != nil {
		l.log.Warn("closing the wal to reopen it", "error", err)
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var w *wal.WAL
		var db *metadb.BoltMetaDB
		if w, db, err = l.reopen(); err == nil {
			l.w, l.db = w, db
			l.log.Info("reopened the wal after " + after)
			return true
		}
		_ = db.Close()
	}
	// The old WAL is closed and no new one opens (the probe succeeded a
	// moment ago): nothing is left to serve raft's reads, which it
	// cannot do without.
	panic(fmt.Sprintf("cluster: reopening the wal after %s: %v", after, err))
}

// probeFile is the segment-sized file walLog.probe creates and removes
// (raft-wal ignores files that are not named as segments).
const probeFile = "rotate-probe.tmp"

// probe creates a segment-sized file in the WAL's directory the way
// raft-wal creates a segment, and removes it.
func (l *walLog) probe() error {
	_ = l.vfs.Delete(l.dir, probeFile) // left by a crash
	f, err := l.vfs.Create(l.dir, probeFile, uint64(walSegmentSize))
	if err != nil {
		return err
	}
	_ = f.Close()
	return l.vfs.Delete(l.dir, probeFile)
}

// Close closes the WAL and its meta store.
func (l *walLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.w.Close()
	if dbErr := l.db.Close(); err == nil {
		err = dbErr
	}
	return err
}
