package cluster

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/fsm"
)

// Snapshots, and why they are built the way they are.
//
// hashicorp/raft calls FSM.Snapshot on the FSM goroutine (no Apply runs
// until it returns) and then FSMSnapshot.Persist on another goroutine
// while later entries are applied; what Persist writes must be the state
// at the Snapshot call, or a restore would replay entries the snapshot
// already holds. fsm.Table has no cheap immutable view (it is a set of
// maps mutated in place), so the point-in-time copy is an encoding of
// the table, made under the node's read lock in Snapshot. Everything
// Snapshot does is a pause of every grant, so it does as little as the
// format allows and leaves the rest to Persist:
//
//   - Snapshot (applies wait): fsm.Table.SnapshotUnordered encodes every
//     key record (key, value) in map order — no collecting and no
//     sorting of the keys — and the small sections (waiters, queues,
//     sessions, fences, request ids, tombstones, scripts) as
//     fsm.Table.Snapshot does, into an unlinked temporary file in
//     DataDir, and each record's offset (8 bytes a key) into a second
//     one, the index, as it goes: nothing in proportion to the table is
//     allocated under the lock or kept until Persist.
//   - Persist (applies go on): maps both files read-only, sorts the
//     record offsets by key and writes the records in key order into
//     raft's sink: the bytes fsm.Table.Snapshot writes, so the format,
//     the golden file and every restore are unchanged (fsm's tests and
//     fuzz target compare the two for random tables). It reads the
//     mappings a few MiB at a time and drops the pages behind it
//     (fsm's WriteOrderedDropping, dropMapped), so they do not all
//     become resident. Where the files cannot be mapped they are read
//     through ReadAt instead: the keys copied to the heap and one read
//     per record, slower, same bytes.
//
// The files are page cache, not heap: removed from the directory as soon
// as they are created (a crash leaves nothing behind), mapped only while
// Persist runs, and read a few MiB at a time with the pages behind
// dropped, so they add little to the resident set. Holding the read lock
// from Snapshot until Persist ends instead would hold it across raft's
// hand-off between the two calls (raft's main loop can then deadlock on
// a full apply channel) and stall readers behind a waiting ApplyBatch.
// The measurements: bench/results/tuning.md#snapshots.

// fileSnapshot is a point-in-time encoded table in an unlinked file, key
// records in map order (fsm.Table.SnapshotUnordered), with their offsets
// in a second unlinked file (the index); Persist puts the records in
// order on the way to the sink.
type fileSnapshot struct {
	f, ix File // from Disk.CreateTemp
	disk  Disk
	names []string // still to remove on Release when unlinking early failed
	order *fsm.UnorderedSnapshot

	// freeMemory: return free heap to the OS once persisted
	// (Config.FreeMemoryAfterSnapshot).
	freeMemory bool
	log        hclog.Logger
	mapFile    func(f *os.File, size int64) (b []byte, unmap func() error, err error) // mapFile; tests fail it

	// writing is how long encode spent in the files' Write calls (in
	// the pause, so worth logging next to it).
	writing time.Duration

	mu       sync.Mutex
	released bool
}

var _ raft.FSMSnapshot = (*fileSnapshot)(nil)

// newFileSnapshot creates the unlinked files in dir on disk (nil:
// OSDisk); it needs no lock, so the caller makes them before locking the
// table.
func newFileSnapshot(disk Disk, dir string) (*fileSnapshot, error) {
	s := &fileSnapshot{log: hclog.NewNullLogger(), mapFile: mapFile, disk: diskOrOS(disk)}
	for _, f := range []*File{&s.f, &s.ix} {
		var err error
		if *f, err = s.disk.CreateTemp(dir, fsmSnapshotPattern); err != nil {
			s.Release()
			return nil, err
		}
		if err := s.disk.Remove((*f).Name()); err != nil {
			// Not on every OS can an open file be unlinked; Release
			// removes it then.
			s.names = append(s.names, (*f).Name())
		}
	}
	return s, nil
}

// encode writes the table into the files with encode (the table locked:
// this is the part applies wait for). On error the snapshot is released.
func (s *fileSnapshot) encode(encode func(w, index io.Writer) (*fsm.UnorderedSnapshot, error)) error {
	tw := &timedWriter{w: s.f}
	tix := &timedWriter{w: s.ix}
	order, err := encode(tw, tix)
	s.writing = tw.d + tix.d
	if err != nil {
		s.Release()
		return err
	}
	s.order = order
	return nil
}

// Persist writes the snapshot into sink in key order, from the files
// mapped read-only (or, where they cannot be mapped, through ReadAt); it
// reads only the files, so applies go on meanwhile. Nothing in s
// changes, so a failed Persist can be retried on the same snapshot; and
// nothing in s is in proportion to the table, so freeing memory at the
// end gives back all that Snapshot and Persist took.
func (s *fileSnapshot) Persist(sink raft.SnapshotSink) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		_ = sink.Cancel()
		return errors.New("cluster: snapshot already released")
	}
	start := time.Now()
	mapped := true
	err := s.writeMapped(sink)
	if errors.Is(err, errNotMapped) {
		mapped = false
		err = s.order.WriteOrderedAt(sink, s.f, s.ix)
	}
	if err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("cluster: persist snapshot: %w", err)
	}
	s.log.Debug("snapshot ordered", "bytes", s.order.Size(), "keys", s.order.Keys(), "mapped", mapped, "took", time.Since(start))
	if s.freeMemory {
		// On raft's snapshot goroutine, so no apply waits for it; before
		// the sink is closed, so a snapshot reported done has given its
		// memory back.
		debug.FreeOSMemory()
	}
	return sink.Close()
}

// errNotMapped: the files could not be mapped; nothing was written.
var errNotMapped = errors.New("cluster: snapshot file not mapped")

// writeMapped writes the ordered snapshot into w from the mapped files.
// The mappings' pages are the page cache's: they count in the process's
// resident set only until the unmap at the end.
func (s *fileSnapshot) writeMapped(w io.Writer) error {
	f, okF := s.f.(*os.File)
	ix, okIx := s.ix.(*os.File)
	if !okF || !okIx {
		return fmt.Errorf("%w: not the operating system's files", errNotMapped)
	}
	b, unmap, err := s.mapFile(f, s.order.Size())
	if err != nil {
		return fmt.Errorf("%w: %v", errNotMapped, err)
	}
	defer func() { _ = unmap() }()
	ixb, unmapIx, err := s.mapFile(ix, s.order.IndexSize())
	if err != nil {
		return fmt.Errorf("%w: %v", errNotMapped, err)
	}
	defer func() { _ = unmapIx() }()
	return s.order.WriteOrderedDropping(w, b, ixb, dropMapped)
}

// Release closes (and so frees) the files. Raft always calls it, also
// when it never calls Persist.
func (s *fileSnapshot) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return
	}
	s.released = true
	s.order = nil
	for _, f := range []File{s.f, s.ix} {
		if f != nil {
			_ = f.Close()
		}
	}
	for _, name := range s.names {
		_ = s.disk.Remove(name)
	}
}

// timedWriter adds up the time its Write calls take.
type timedWriter struct {
	w io.Writer
	d time.Duration
}

func (t *timedWriter) Write(p []byte) (int, error) {
	start := time.Now()
	n, err := t.w.Write(p)
	t.d += time.Since(start)
	return n, err
}

// Restores run with the collector on: switching it off for a restore
// saved no time to serving (bench/results/tuning.md#snapshots), and a
// process-wide setting would change under an embedding application.
